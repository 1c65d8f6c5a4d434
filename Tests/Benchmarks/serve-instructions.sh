#!/usr/bin/env bash
# Instructions an event of `notify-route-bench serve` under load, counted by callgrind: the
# count does not drift with the VM's speed as CPU time does (serve-pairs.sh), so a change of
# 1 % shows in one run. Each build's serve runs under `valgrind --tool=callgrind` twice on a
# fresh state directory: warmed with 1,600 events from daemon-load (8 clients, 64 requests in
# flight each), then stopped (SIGTERM), and warmed then fed EVENTS more. The difference of
# the two totals over EVENTS is printed, and the same without the history's insert and fold
# ("steady"), whose share varies by some 2,000 instructions an event from run to run under
# valgrind (how many batches insert and how many spool depends on the timing).
#
#   bash Tests/Benchmarks/serve-instructions.sh EVENTS BIN_DIR...
#
# Each BIN_DIR holds a notify-route-bench of release-flags.sh's flags; its name labels the
# build. Needs valgrind (3.19 reads no DWARF 5: the binary is copied without its debug
# information), callgrind_annotate and cc. 60,000 events take about 80 s a build.
set -euo pipefail
EVENTS=${1:?usage: serve-instructions.sh EVENTS BIN_DIR...}
shift
[ $# -ge 1 ] || { echo "usage: serve-instructions.sh EVENTS BIN_DIR..." >&2; exit 64; }
for tool in valgrind callgrind_annotate objcopy cc; do
  command -v "$tool" >/dev/null || { echo "serve-instructions.sh: needs $tool" >&2; exit 69; }
done
cd "$(dirname "$0")/../.."
source Tests/Benchmarks/load-work.sh instructions

# serve_run BIN EVENTS OUT: callgrind's output of one serve fed 1,600 then EVENTS events.
serve_run() {
  local run
  run=$(mktemp -d "$W/run.XXXX")
  BENCH_STATE_DIR=$run valgrind --tool=callgrind --callgrind-out-file="$3" "$1" serve "$run/socket" >"$run/serve.log" 2>&1 &
  SERVE=$!
  for _ in $(seq 600); do [ -S "$run/socket" ] && break; sleep 0.1; done
  [ -S "$run/socket" ] || { echo "serve-instructions.sh: serve did not listen: $(tail -3 "$run/serve.log")" >&2; exit 1; }
  "$W/daemon-load" "$run/socket" 8 200 64 counting >/dev/null
  if [ "$2" -gt 0 ]; then "$W/daemon-load" "$run/socket" 8 $(($2 / 8)) 64 counting >/dev/null; fi
  kill -TERM "$SERVE"
  wait "$SERVE" || true
  SERVE=
}

for dir in "$@"; do
  [ -x "$dir/notify-route-bench" ] || { echo "serve-instructions.sh: no notify-route-bench in $dir" >&2; exit 66; }
  name=$(basename "$dir")
  objcopy --strip-debug "$dir/notify-route-bench" "$W/$name"
  serve_run "$W/$name" 0 "$W/$name.base"
  serve_run "$W/$name" "$EVENTS" "$W/$name.load"
  python3 - "$W/$name.base" "$W/$name.load" "$EVENTS" "$name" <<'EOF'
import re, subprocess, sys
# The history's insert, fold and SQLite: their share depends on how the batches fell.
varies = re.compile(r'sqlite|HistorySpool|[Ff]old|[Ii]nsert|wal|[Bb]tree|memchr|strtod|[Pp]ager|[Vv]dbe|Mem|bind|Cell|balance|[Pp]age|evict|Varint|Record|Checksum|Cursor|Expr|Parse')
def costs(path):
    out = subprocess.run(['callgrind_annotate', '--threshold=100', '--inclusive=no', path], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r'\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[.*\])?$', line)
        if match and 'PROGRAM TOTALS' not in match.group(2):
            found[match.group(2)] = found.get(match.group(2), 0) + int(match.group(1).replace(',', ''))
    return found
base, load, events = costs(sys.argv[1]), costs(sys.argv[2]), int(sys.argv[3])
every = (sum(load.values()) - sum(base.values())) / events
steady = (sum(v for k, v in load.items() if not varies.search(k)) - sum(v for k, v in base.items() if not varies.search(k))) / events
print(f"build={sys.argv[4]} events={events} instructions_per_event={every:.0f} steady_per_event={steady:.0f}")
EOF
done
