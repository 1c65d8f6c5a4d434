#!/usr/bin/env bash
# The hand-off to notify-route-network decided per event: a config that declares an
# Alertmanager sink but routes info to the terminal, sent an info event (terminal only) and
# an error event (Alertmanager), by two builds side by side: callgrind instructions (every
# process of the command: --trace-children, so the exec'd one counts too) and hyperfine
# wall clock, interleaved (Tests/Benchmarks/README.md, "Why the code is so").
#
#   bash Tests/Benchmarks/per-event-handoff.sh BEFORE_BIN_DIR AFTER_BIN_DIR [RUNS] [ROUNDS]
#
# Each BIN_DIR holds both executables of one release build (release-flags.sh); they are
# copied stripped (objcopy --strip-debug). Needs valgrind, hyperfine and prometheus-alertmanager.
set -euo pipefail
BEFORE=${1:?usage: per-event-handoff.sh BEFORE_BIN_DIR AFTER_BIN_DIR [RUNS] [ROUNDS]}
AFTER=${2:?usage: per-event-handoff.sh BEFORE_BIN_DIR AFTER_BIN_DIR [RUNS] [ROUNDS]}
RUNS=${3:-100}
ROUNDS=${4:-3}
W=$(mktemp -d /tmp/notify-route-per-event.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"' EXIT
for who in before after; do
  dir=$BEFORE; [ "$who" = after ] && dir=$AFTER
  mkdir -p "$W/$who"
  objcopy --strip-debug "$dir/notify-route" "$W/$who/notify-route"
  objcopy --strip-debug "$dir/notify-route-network" "$W/$who/notify-route-network"
done

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
AM_PORT=$(port)
printf "route: { receiver: none, group_by: ['...'] }\nreceivers: [{ name: none }]\n" >"$W/am.yml"
prometheus-alertmanager --config.file="$W/am.yml" --storage.path="$W/am" --web.listen-address="127.0.0.1:$AM_PORT" \
  --cluster.listen-address= >"$W/am.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$AM_PORT/-/ready" >/dev/null && break; sleep 0.1; done
cat >"$W/mixed.yaml" <<EOF
sinks:
  tty: { kind: terminal, output: stdout }
  am: { kind: alertmanager, url: "http://127.0.0.1:$AM_PORT", instance: bench }
routes:
  - match: { level: info }
    to: [tty]
fallback: [am]
EOF
export NO_COLOR=1 NOTIFY_ROUTE_SOCKET=/nonexistent
for who in before after; do for l in info error; do mkdir -m 700 "$W/rt-$who-$l" "$W/st-$who-$l"; done; done
send() {
  echo "env XDG_RUNTIME_DIR=$W/rt-$1-$2 XDG_STATE_HOME=$W/st-$1-$2 $W/$1/notify-route send --config $W/mixed.yaml -l $2 -r bench-$2 'Disk full' '92% used'"
}
for who in before after; do for l in info error; do for _ in 1 2; do eval "$(send "$who" "$l")" >/dev/null; done; done; done

uptime
# callgrind dumps nothing of a program that execs another: with --trace-children the file
# holds the exec'd program's part; notify-route's part before the exec is measured on a copy
# alone in its directory, where the exec fails at once (as two-executables.sh does).
count() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }
for who in before after; do
  mkdir -p "$W/alone-$who" && cp "$W/$who/notify-route" "$W/alone-$who/"
  for l in info error; do
    env XDG_RUNTIME_DIR="$W/rt-$who-$l" XDG_STATE_HOME="$W/st-$who-$l" valgrind --tool=callgrind --trace-children=yes \
      --callgrind-out-file="$W/$who-$l.cg" "$W/$who/notify-route" send --config "$W/mixed.yaml" -l "$l" -r "bench-$l" "Disk full" "92% used" \
      >/dev/null 2>"$W/$who-$l.vg" || echo "($who -l $l exited $?)"
    status=0
    env XDG_RUNTIME_DIR="$W/rt-$who-$l" XDG_STATE_HOME="$W/st-$who-$l" valgrind --tool=callgrind \
      --callgrind-out-file="$W/alone-$who-$l.cg" "$W/alone-$who/notify-route" send --config "$W/mixed.yaml" -l "$l" -r "bench-$l" "Disk full" "92% used" \
      >/dev/null 2>"$W/alone-$who-$l.vg" || status=$?
    if [ "$status" = 69 ]; then
      echo "callgrind $who, -l $l: $(( $(count "$W/alone-$who-$l.cg") + $(count "$W/$who-$l.cg") )) instructions" \
        "(notify-route up to the exec $(count "$W/alone-$who-$l.cg"), notify-route-network $(count "$W/$who-$l.cg"))"
    else
      echo "callgrind $who, -l $l: $(count "$W/$who-$l.cg") instructions (notify-route alone, no exec; the copy alone: $(count "$W/alone-$who-$l.cg"), exit $status)"
    fi
  done
done

for r in $(seq "$ROUNDS"); do
  hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$W/hf-$r.json" \
    -n "info (terminal), before" "$(send before info)" \
    -n "info (terminal), after" "$(send after info)" \
    -n "error (Alertmanager), before" "$(send before error)" \
    -n "error (Alertmanager), after" "$(send after error)" >/dev/null
done
uptime
python3 "$(dirname "$0")/hf-rounds.py" "$ROUNDS" "$W" 32
