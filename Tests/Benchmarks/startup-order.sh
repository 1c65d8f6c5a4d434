#!/usr/bin/env bash
# Writes config/tuned/startup.order: the functions the usual commands run, in the
# order lld should lay them out (`--symbol-ordering-file`, see "What each option of the tuned build buys" in Tests/Benchmarks/README.md).
#
#   bash Tests/Benchmarks/startup-order.sh
#
# Together in .text, the code of a start-up is read in by a few page faults (each maps 64 KB
# of the file around the fault) instead of one fault per function scattered over 11 MB.
# Run it again when start-up code changes a lot; a stale file only orders less (lld skips
# names it does not find, and run.sh prints how many it found).
#
# Needs root, like the tests: the commands run against a private journald and a private
# session bus with python-dbusmock's notification daemon, under valgrind's callgrind,
# which lists every function a run executes.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
ORDER=$ROOT/config/tuned/startup.order

if [ "${ORDER_STAGE:-}" != inner ]; then
  command -v valgrind >/dev/null || apt-get install -y valgrind >/dev/null
  source config/tuned/release-flags.sh
  touch "$ORDER"  # the build links with it: a first run starts from an empty one
  BUILD=(swift build "${RELEASE_FLAGS[@]}" --scratch-path .build-bench-release)
  BIN=$("${BUILD[@]}" --show-bin-path)
  TMP=$(mktemp -d /tmp/notify-route-order.XXXXXX)
  trap 'rm -rf "$TMP"' EXIT
  # Linked with a map (mangled names): it says which input section holds each function.
  rm -f "$BIN/notify-route"
  "${BUILD[@]}" --product notify-route "${LEAN_FLAGS[@]}" -Xlinker -Map="$TMP/map" -Xlinker --no-demangle
  # valgrind 3.19 cannot read Swift's DWARF 5: profile a copy without debug information.
  strip --strip-debug -o "$TMP/notify-route" "$BIN/notify-route"
  rm -f "$BIN/notify-route"  # so that the next build links again, without the map
  # `serve` runs from notify-route-network, which notify-route finds beside itself.
  "${BUILD[@]}" --product notify-route-network
  ln -s "$BIN/notify-route-network" "$TMP/notify-route-network"
  export ORDER_STAGE=inner ORDER_BIN=$TMP/notify-route ORDER_MAP=$TMP/map
  bash Tests/with-components.sh dbus-run-session -- bash "$0" "$@"
  exit
fi

# ---- inside a private journald and a private session bus ----
source Tests/Benchmarks/bench-session.sh
# The benchmark's config with deadlines valgrind's slowness cannot reach: the profiles
# are of deliveries, not of time-outs.
sed 's/deadline: 1s/deadline: 30s/' "$WORK/bench.yaml" >"$WORK/order.yaml"

# Most common first: what every command runs, then sends handed to `serve` (a session's
# usual path), then a send to the journal routed here, the embedded config's send, and the desktop's.
profile() {
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.$1" "$ORDER_BIN" "${@:2}" >/dev/null 2>&1 || true
}
profile 1 --version
SOCK=$WORK/runtime/order.socket
"$ORDER_BIN" serve --config "$WORK/order.yaml" --socket "$SOCK" >"$WORK/order-serve.log" 2>&1 &
SERVE=$!
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
profile 7 send --config "$WORK/order.yaml" --socket "$SOCK" --sink journal "Disk almost full" "92% used"
profile 8 send --config "$WORK/order.yaml" --socket "$SOCK" --sink desktop "Disk almost full" "92% used"
# A client under valgrind may miss the greeting's 100 ms and route here: the daemon's
# counts say whether the two profiled sends reached it.
handed=$("$ORDER_BIN" status --json --socket "$SOCK" 2>/dev/null | /usr/bin/python3 -c '
import json, sys
sinks = json.load(sys.stdin).get("sinks", {})
print(sum(sinks.get(name, {}).get("delivered", 0) for name in ("journal", "desktop")))' || true)
kill -TERM $SERVE 2>/dev/null || true
wait $SERVE || true
[ "$handed" = 2 ] || echo "startup-order.sh: the sends under valgrind were not handed to serve; their profiles are of local sends: $(cat "$WORK/order-serve.log")" >&2
profile 2 send --config "$WORK/order.yaml" --sink journal "Disk almost full" "92% used"
# A route with a dedup window: the state database's open, transaction and close.
printf 'sinks: { tty: { kind: terminal } }\nroutes: [ { match: {}, to: [tty], dedup: { window: 1h } } ]\n' >"$WORK/order-dedup.yaml"
profile 6 send --config "$WORK/order-dedup.yaml" "Disk almost full" "92% used"
profile 3 send -l warning "Disk almost full" "92% used"
profile 4 send --dry-run --config "$WORK/order.yaml" "Disk almost full"
profile 5 send --config "$WORK/order.yaml" --sink desktop "Disk almost full" "92% used"

/usr/bin/python3 - "$ORDER_BIN" "$ORDER_MAP" "$ORDER" "$WORK"/cg.{1,7,8,2,6,3,4,5} <<'PY'
import re, sys
binary, linkmap, out, profiles = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
names, seen = [], set()
for path in profiles:
    objects, functions, current, called = {}, {}, None, None
    for line in open(path, errors="replace"):
        m = re.match(r"^(ob|cob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            kind, key, name = m.groups()
            if name: objects[key] = name
            if kind == "ob": current, called = objects.get(key), None
            else: called = objects.get(key)
            continue
        m = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m: continue
        kind, key, name = m.groups()
        if name: functions[key] = name
        owner = current if kind == "fn" else (called or current)
        if kind == "cfn": called = None
        # callgrind marks recursion levels with 'N; lld wants the plain name.
        name = re.sub(r"'\d+$", "", functions.get(key, ""))
        if name and owner == binary and name not in seen:
            seen.add(name)
            names.append(name)
if len(names) < 500:
    sys.exit(f"startup-order.sh: only {len(names)} functions profiled; is valgrind working? ({profiles[0]})")
# lld moves whole input sections. Most functions have one of their own (-function-sections),
# but some libraries of the toolchain hold many in one (the standard library's 1.6 MB
# .text): those go last, or each would pull its whole section into the middle of the others.
section_size, size, in_text = {}, None, False
for line in open(linkmap):
    fields = line.split(None, 4)
    if len(fields) < 5: continue
    what = fields[4].strip()
    if what.startswith("."):
        in_text = what == ".text"
    elif in_text and ":(" in what:
        size = int(fields[2], 16)
    elif in_text and fields[3] == "1" and size is not None:
        section_size[what] = size
alone = [n for n in names if section_size.get(n, 0) <= 65536]
shared = [n for n in names if section_size.get(n, 0) > 65536]
with open(out, "w") as f:
    f.write("\n".join(alone + shared) + "\n")
print(f"startup-order.sh: {len(names)} functions written to {out}, {len(shared)} of them last (in large shared sections)")
PY
