#!/usr/bin/env bash
# What the history (issue 23) costs: the instructions one `send` adds by recording it
# (callgrind, the history on vs off, on a copy of the binary without debug info), its
# system calls, `history --since 1h` over a full log (10,000 events) in text and JSON form,
# and `replay` of that log (events/s).
#
#   bash Tests/Benchmarks/history.sh BIN_DIR [EVENTS]
set -euo pipefail
BIN=$1; N=${2:-10000}
WORK=$(mktemp -d /dev/shm/notify-route-history.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -m 700 "$WORK/runtime" "$WORK/state"
touch "$WORK/not-a-directory"
objcopy --strip-debug "$BIN/notify-route" "$WORK/nr"
cat >"$WORK/c.yaml" <<YAML
sinks: { tty: { kind: terminal } }
routes: [ { match: {}, to: [tty], dedup: { window: 1h } } ]
YAML
run() { env XDG_RUNTIME_DIR="$WORK/runtime" NO_COLOR=1 "$@"; }

# One send: a few first so that the databases exist, then the measured one.
instructions() {
  for _ in 1 2 3; do run XDG_STATE_HOME="$1" "$WORK/nr" send --config "$WORK/c.yaml" "Disk full" "92% used" 2>/dev/null; done
  run XDG_STATE_HOME="$1" valgrind --tool=callgrind --callgrind-out-file="$WORK/cg" \
    "$WORK/nr" send --config "$WORK/c.yaml" "Disk full" "92% used" 2>/dev/null
  grep -m1 '^summary:' "$WORK/cg" | awk '{print $2}'
}
on=$(instructions "$WORK/state"); off=$(instructions "$WORK/not-a-directory")
echo "send instructions: history on $on, off $off, recording adds $((on - off))"
calls() {
  run XDG_STATE_HOME="$1" strace -f -c -o "$WORK/strace" "$WORK/nr" send --config "$WORK/c.yaml" "Disk full" "92% used" 2>/dev/null
  awk '/total/ {print $4}' "$WORK/strace"
}
echo "send system calls: history on $(calls "$WORK/state"), off $(calls "$WORK/not-a-directory")"

# A full log: N events through ingest (the default bound is 10,000).
python3 -c "
import sys
for i in range($N): print('{\"title\":\"event %d\",\"source\":\"bench\",\"tags\":[\"t%d\"]}' % (i, i % 7))
" >"$WORK/events.jsonl"
run XDG_STATE_HOME="$WORK/state" "$BIN/notify-route" ingest --config "$WORK/c.yaml" <"$WORK/events.jsonl" >/dev/null 2>&1
kept=$(sqlite3 "$WORK/state/notify-route/history.db" 'SELECT count(*) FROM events')
seconds() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; python3 -c "import sys; print(round(($(date +%s.%N) - $s) * 1000, 1))"; }
for form in text json; do
  flag=(); [ $form = json ] && flag=(--json)
  best=999999
  for _ in 1 2 3 4 5; do
    ms=$(seconds run XDG_STATE_HOME="$WORK/state" "$BIN/notify-route" history --since 1h "${flag[@]}")
    best=$(python3 -c "print(min($best, $ms))")
  done
  echo "history --since 1h ($form) over $kept events: best of 5 $best ms"
done
ms=$(seconds run XDG_STATE_HOME="$WORK/state" "$BIN/notify-route" replay --config "$WORK/c.yaml" --since 1h)
echo "replay of $kept events: $ms ms, $(python3 -c "print(int($kept / ($ms / 1000)))") events/s"
