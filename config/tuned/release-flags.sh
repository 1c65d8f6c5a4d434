# The tuned release build's options, as Tests/Benchmarks/README.md's "Release build" gives them (it says why
# each): sourced by run.sh and startup-order.sh, and by the Makefile for `make install TUNED=1`, so that
# what they measure is what that installs (the default build of the Makefile uses none of them).
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
# `notify-route` alone is linked as a position-dependent executable: a PIE's start-up
# relocates 47,000 pointers of Swift metadata, each page of them copied on write, about
# 130 page faults and 400,000 instructions per send (0.2-0.3 ms; Tests/Benchmarks/README.md,
# "Position-dependent notify-route"). It is a command of its own user's; `serve` and the
# network sinks run `notify-route-network`, which stays a PIE, as do the libraries it maps.
# -static-libgcc: its unwinder linked in, so libgcc_s.so is not looked up, mapped and
# relocated at every start (`--version` 1.32 -> 1.15 ms median; README, "The client's
# start and the daemon's hand-overs, eighth pass").
LEAN_FLAGS=(-Xlinker --no-pie -Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
