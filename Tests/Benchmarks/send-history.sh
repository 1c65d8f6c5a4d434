#!/usr/bin/env bash
# What one `send` costs with the history on and off, for several builds side by side
# (issues 20.5 and 23.6): callgrind instructions on copies stripped of debug info, then
# hyperfine with every build and case in each round, so that load falls on all alike.
# The terminal sink, a route with a one-hour dedup window (the event a counted duplicate)
# or none; runtime state on tmpfs, the history in its own XDG_STATE_HOME on disk ("off":
# XDG_STATE_HOME is a file).
#
#   bash Tests/Benchmarks/send-history.sh [--runs N] [--rounds N] NAME=BINARY...
set -euo pipefail
RUNS=10; ROUNDS=6
while [[ ${1:-} == --* ]]; do case $1 in --runs) RUNS=$2; shift 2;; --rounds) ROUNDS=$2; shift 2;; *) exit 64;; esac; done
W=$(mktemp -d /tmp/notify-route-send-history.XXXXXX)
trap 'rm -rf "$W" /dev/shm/nr-sh-"$(basename "$W")"-*' EXIT
printf 'sinks: { tty: { kind: terminal } }\nroutes: [ { match: {}, to: [tty], dedup: { window: 1h } } ]\n' >"$W/dedup.yaml"
printf 'sinks: { tty: { kind: terminal } }\nroutes: [ { match: {}, to: [tty] } ]\n' >"$W/nodedup.yaml"
touch "$W/not-a-directory"
cases=()
for spec in "$@"; do
  name=${spec%%=*}
  objcopy --strip-debug "${spec#*=}" "$W/$name"
  for c in dedup nodedup; do for h in on off; do
    rt=/dev/shm/nr-sh-$(basename "$W")-$name-$c-$h; mkdir -m 700 "$rt"
    st=$W/state-$name-$c; mkdir -p -m 700 "$st"; [ $h = off ] && st=$W/not-a-directory
    cases+=("$name-$c-$h|XDG_STATE_HOME=$st XDG_RUNTIME_DIR=$rt|$W/$name send --config $W/$c.yaml 'Disk full' '92% used'")
  done; done
done
for entry in "${cases[@]}"; do
  IFS='|' read -r name environment program <<<"$entry"
  for _ in 1 2 3; do eval "env $environment $program" 2>/dev/null || true; done
  eval "env $environment valgrind --tool=callgrind --callgrind-out-file=$W/cg $program" >/dev/null 2>&1 || true
  echo "instructions $name: $(grep -m1 '^summary:' "$W/cg" | awk '{print $2}')"
done
args=()
for entry in "${cases[@]}"; do
  IFS='|' read -r name environment program <<<"$entry"
  args+=(-n "$name" "env $environment $program")
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  hyperfine -N --style none --warmup 3 --runs "$RUNS" --export-json "$W/hf-$r.json" "${args[@]}" >/dev/null 2>&1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$W" "$ROUNDS" <<'PY'
import json, statistics, sys
w, n = sys.argv[1], int(sys.argv[2])
parts = [json.load(open(f"{w}/hf-{r}.json"))["results"] for r in range(1, n + 1)]
for i, first in enumerate(parts[0]):
    t = [x for p in parts for x in p[i]["times"]]
    cpu = statistics.median(p[i]["user"] + p[i]["system"] for p in parts)
    print(f"wall {first['command']:20s} median {statistics.median(t)*1000:6.2f} ms  min {min(t)*1000:6.2f} ms  user+sys {cpu*1000:5.2f} ms")
PY
