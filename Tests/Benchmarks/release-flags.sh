# The release build's options, as Tests/Benchmarks/README.md's "Release build" gives them (it says why
# each): sourced by run.sh and startup-order.sh so that what they measure is what users
# install. Defines RELEASE_FLAGS; needs ROOT (the package's root).
mkdir -p "$ROOT/.build-static" && ln -sf "$(gcc -print-file-name=libstdc++.a)" "$ROOT/.build-static/"
RELEASE_FLAGS=(-c release --static-swift-stdlib --disable-local-rpath
  -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
  -Xswiftc -Xfrontend -Xswiftc -function-sections
  -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker -L"$ROOT/.build-static"
  -Xlinker --symbol-ordering-file="$ROOT/Tests/Benchmarks/startup.order" -Xlinker --no-warn-symbol-ordering
  -Xlinker --version-script="$ROOT/Tests/Benchmarks/exports.map")
