#!/usr/bin/env bash
# What the split into notify-route (no network code) and notify-route-network costs and
# saves: callgrind instructions and hyperfine wall clock of warm sends, side by side, with
# one Alertmanager 0.25 on loopback (Tests/Benchmarks/README.md, "Why the code is so").
#
#   bash Tests/Benchmarks/two-executables.sh BIN_DIR [RUNS] [ROUNDS]
#
# BIN_DIR holds both executables of one release build (release-flags.sh); they are copied
# stripped (objcopy --strip-debug). Needs valgrind, hyperfine and prometheus-alertmanager.
set -euo pipefail
BIN=${1:?usage: two-executables.sh BIN_DIR [RUNS] [ROUNDS]}
RUNS=${2:-100}
ROUNDS=${3:-3}
W=$(mktemp -d /tmp/notify-route-two-exec.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$W"' EXIT
B=$W/bin
mkdir -p "$B" "$W/alone"
objcopy --strip-debug "$BIN/notify-route" "$B/notify-route"
objcopy --strip-debug "$BIN/notify-route-network" "$B/notify-route-network"
cp "$B/notify-route" "$W/alone/"  # without notify-route-network beside it: the exec fails at once
ls -l "$B"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
AM_PORT=$(port)
printf "route: { receiver: none, group_by: ['...'] }\nreceivers: [{ name: none }]\n" >"$W/am.yml"
prometheus-alertmanager --config.file="$W/am.yml" --storage.path="$W/am" --web.listen-address="127.0.0.1:$AM_PORT" \
  --cluster.listen-address= >"$W/am.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$AM_PORT/-/ready" >/dev/null && break; sleep 0.1; done
printf 'sinks: { tty: { kind: terminal, output: stdout } }\nroutes: [ { match: {}, to: [tty] } ]\n' >"$W/term.yaml"
printf 'sinks:\n  am: { kind: alertmanager, url: "http://127.0.0.1:%s", instance: bench }\nfallback: [am]\n' "$AM_PORT" >"$W/am.yaml"
export NO_COLOR=1 NOTIFY_ROUTE_SOCKET=/nonexistent XDG_STATE_HOME=$W/state
mkdir -m 700 "$W/state"
for who in lean full; do for c in term am; do mkdir -m 700 "$W/rt-$who-$c"; done; done
exe() { if [ "$1" = lean ]; then echo "$B/notify-route"; else echo "$B/notify-route-network"; fi; }
send() { echo "env XDG_RUNTIME_DIR=$W/rt-$1-$2 $(exe "$1") send --config $W/$2.yaml -r bench-$1 'Disk full' '92% used'"; }
for who in lean full; do for c in term am; do for _ in 1 2; do eval "$(send $who $c)" >/dev/null; done; done; done

uptime
for who in lean full; do
  XDG_RUNTIME_DIR=$W/rt-$who-term valgrind --tool=callgrind --callgrind-out-file="$W/$who.cg" "$(exe $who)" \
    send --config "$W/term.yaml" -r bench-$who "Disk full" "92% used" >/dev/null 2>"$W/$who.vg"
  echo "callgrind send to the terminal, $who: $(grep -m1 '^summary:' "$W/$who.cg" | awk '{print $2}')"
done
# callgrind writes nothing across an exec: notify-route's part before it, measured where the exec fails.
XDG_RUNTIME_DIR=$W/rt-lean-am valgrind --tool=callgrind --callgrind-out-file="$W/pre.cg" "$W/alone/notify-route" \
  send --config "$W/am.yaml" -r bench-lean "Disk full" "92% used" >/dev/null 2>"$W/pre.vg" || true
echo "callgrind notify-route's part before the exec (send to Alertmanager): $(grep -m1 '^summary:' "$W/pre.cg" | awk '{print $2}')"

for r in $(seq "$ROUNDS"); do
  hyperfine -N --style none --warmup 5 --runs "$RUNS" --export-json "$W/hf-$r.json" \
    -n "send to the terminal, notify-route" "$(send lean term)" \
    -n "send to the terminal, notify-route-network" "$(send full term)" \
    -n "send to Alertmanager, through notify-route" "$(send lean am)" \
    -n "send to Alertmanager, notify-route-network" "$(send full am)" >/dev/null
done
uptime
python3 "$(dirname "$0")/hf-rounds.py" "$ROUNDS" "$W" 45
