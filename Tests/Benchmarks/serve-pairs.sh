#!/usr/bin/env bash
# Builds of `notify-route-bench serve` compared under load, in turn: each round starts each
# build's serve on a state directory of its own, warms it with 16,000 events, then feeds it
# 200,000 from daemon-load (8 clients, 64 requests in flight each) while `perf stat` counts
# serve's CPU. Prints, per round and build, µs of serve's CPU an event and events/s, then
# each build's medians. The builds run in turn, round after round, so that this VM's drift
# (±12 % from one minute to the next) falls on each alike: a before/after of a few percent
# needs six rounds or more.
#
#   bash Tests/Benchmarks/serve-pairs.sh ROUNDS BIN_DIR...
#
# Each BIN_DIR holds a notify-route-bench of release-flags.sh's flags; its name labels the
# build. Needs perf and cc; state and history go under /tmp, a disk file system.
set -euo pipefail
ROUNDS=${1:?usage: serve-pairs.sh ROUNDS BIN_DIR...}
shift
[ $# -ge 1 ] || { echo "usage: serve-pairs.sh ROUNDS BIN_DIR..." >&2; exit 64; }
for dir in "$@"; do
  [ -x "$dir/notify-route-bench" ] || { echo "serve-pairs.sh: no notify-route-bench in $dir" >&2; exit 66; }
done
cd "$(dirname "$0")/../.."
source Tests/Benchmarks/load-work.sh pairs
EVENTS=200000
for round in $(seq "$ROUNDS"); do
  for dir in "$@"; do
    run=$(mktemp -d "$W/run.XXXX")
    BENCH_STATE_DIR=$run "$dir/notify-route-bench" serve "$run/socket" >"$run/serve.log" 2>&1 &
    SERVE=$!
    for _ in $(seq 200); do [ -S "$run/socket" ] && break; sleep 0.05; done
    [ -S "$run/socket" ] || { echo "serve-pairs.sh: $dir's serve did not listen: $(cat "$run/serve.log")" >&2; exit 1; }
    "$W/daemon-load" "$run/socket" 8 2000 64 counting >/dev/null
    perf stat -e task-clock -p "$SERVE" -o "$run/stat" &
    STAT=$!
    sleep 0.2
    result=$("$W/daemon-load" "$run/socket" 8 $((EVENTS / 8)) 64 counting)
    kill -INT "$STAT"
    wait "$STAT" 2>/dev/null || true
    kill "$SERVE"
    wait "$SERVE" 2>/dev/null || true
    SERVE=
    us=$(awk -v n=$EVENTS '/task-clock/ { gsub(",", "", $1); printf "%.2f", $1 * 1000 / n }' "$run/stat")
    eps=$(grep -oE 'events_per_s=[0-9]+' <<<"$result" | cut -d= -f2)
    failed=$(grep -oE 'failed=[0-9]+' <<<"$result" | cut -d= -f2)
    echo "round=$round build=$(basename "$dir") serve_us_per_event=$us events_per_s=$eps failed=$failed" | tee -a "$W/results"
    rm -rf "$run"
  done
done
python3 - "$W/results" <<'PY'
import statistics, sys
rows = [dict(field.split("=", 1) for field in line.split()) for line in open(sys.argv[1])]
for build in dict.fromkeys(row["build"] for row in rows):
    mine = [row for row in rows if row["build"] == build]
    us = statistics.median(float(row["serve_us_per_event"]) for row in mine)
    eps = statistics.median(int(row["events_per_s"]) for row in mine)
    print(f"MEDIAN build={build} rounds={len(mine)} serve_us_per_event={us:.2f} events_per_s={eps:.0f}")
PY
