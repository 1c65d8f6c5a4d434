# The tuned release build's options (Tests/Benchmarks/README.md, "What each option of the tuned build
# buys", says why each): sourced by run.sh and startup-order.sh, and by the Makefile for `make install
# TUNED=1`, so that what they measure is what that installs.
# Defines RELEASE_FLAGS, and LEAN_FLAGS for the `notify-route` product; needs ROOT (the package's root).
# The module maps link -lsqlite3 and -lyaml (shared, as the default build ships them): the
# archives alone in a directory searched before the system's make the linker take those instead.
mkdir -p "$ROOT/.build-static"
for archive in libstdc++.a libsqlite3.a libyaml.a; do ln -sf "$(gcc -print-file-name=$archive)" "$ROOT/.build-static/"; done
RELEASE_FLAGS=(-c release --static-swift-stdlib --disable-local-rpath -Xswiftc -L"$ROOT/.build-static"
  -Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors
  -Xswiftc -Xfrontend -Xswiftc -function-sections
  -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker -L"$ROOT/.build-static"
  -Xlinker --symbol-ordering-file="$ROOT/config/tuned/startup.order" -Xlinker --no-warn-symbol-ordering
  -Xlinker --version-script="$ROOT/config/tuned/exports.map")
# `notify-route` alone is linked as a position-dependent executable: a PIE's start-up writes
# every pointer of Swift's metadata, each page of them copied. It is a command of its own
# user's; `serve` and the network sinks run `notify-route-network`, which stays a PIE, as do
# the libraries it maps. -static-libgcc: its unwinder linked in, so libgcc_s.so is not looked
# up, mapped and relocated at every start. (Tests/Benchmarks/README.md, "What each option of
# the tuned build buys".)
LEAN_FLAGS=(-Xlinker --no-pie -Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
