#!/usr/bin/env bash
# Two `notify-route` clients handing the same send to one `serve`, run by run
# (interleaved.c), beside `logger --journald`: a before/after of a change to the
# client's path, or to what a lone send costs the daemon, that the VM's drift does not blur.
#
#   bash Tests/Benchmarks/client-ab.sh BEFORE AFTER [journal|desktop]
#
# BEFORE and AFTER are `notify-route` executables; `serve` is AFTER's (its
# notify-route-network beside it), or SERVE_BIN's directory's. Each of ROUNDS rounds (4)
# runs RUNS turns (250) of logger, before, after, after, before: drift and a command's
# place in the turn cancel out. Prints each round's medians and after minus before.
# Needs root, like run.sh (a private journald).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${BENCH_STAGE:-}" != inner ]; then
  [ $# -ge 2 ] || { echo "usage: client-ab.sh BEFORE AFTER [journal|desktop]" >&2; exit 64; }
  BEFORE=$(readlink -f "$1") AFTER=$(readlink -f "$2")
  SERVE_BIN=$(readlink -f "${SERVE_BIN:-$AFTER}")
  source Tests/Benchmarks/bench-tools.sh
  BIN=$(mktemp -d /tmp/notify-route-ab.XXXXXX)
  trap 'rm -rf "$BIN"' EXIT
  cc -O2 -o "$BIN/interleaved" Tests/Benchmarks/interleaved.c
  export BENCH_STAGE=inner BEFORE AFTER SERVE_BIN INTERLEAVED=$BIN/interleaved SINK=${3:-journal}
  bash Tests/with-components.sh dbus-run-session -- bash "$0"
  exit
fi
source Tests/Benchmarks/bench-session.sh
printf 'MESSAGE=Disk almost full: 92%% used\nPRIORITY=4\nSYSLOG_IDENTIFIER=notify-route\n' >"$WORK/logger.txt"
SOCK=$WORK/runtime/ab.socket
"$SERVE_BIN" serve --config "$WORK/bench.yaml" --socket "$SOCK" >"$WORK/serve.log" 2>&1 &
SERVE=$!
# Stopped before bench-session.sh's own clean-up, whatever ends the script: a serve left
# behind keeps the caller's output open.
session_exit=$(trap -p EXIT | sed "s/^trap -- '//; s/' EXIT\$//")
trap "rc=\$?; kill -TERM $SERVE 2>/dev/null; wait $SERVE 2>/dev/null; (exit \$rc); $session_exit" EXIT
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
for _ in $(seq 10); do "$AFTER" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink "$SINK" warm up >/dev/null 2>&1 || true; done
for client in "$BEFORE" "$AFTER"; do
  "$client" send --json --config "$WORK/bench.yaml" --socket "$SOCK" --sink "$SINK" check | grep -q '"via":"daemon"' ||
    { echo "client-ab.sh: $client did not hand its send to the daemon" >&2; exit 1; }
done
send() { echo "$1 send --config $WORK/bench.yaml --socket $SOCK --sink $SINK 'Disk almost full' '92% used'"; }
{ echo "$(command -v logger) --journald=$WORK/logger.txt"
  send "$BEFORE"; send "$AFTER"; send "$AFTER"; send "$BEFORE"; } >"$WORK/commands"
for round in $(seq "${ROUNDS:-4}"); do
  "$INTERLEAVED" "${RUNS:-250}" "$WORK/commands" >"$WORK/round.txt"
  /usr/bin/python3 - "$WORK/round.txt" "$round" <<'PY'
import sys
medians = [float(line.split()[0].split("=")[1]) for line in open(sys.argv[1])]
logger, before, after = medians[0], (medians[1] + medians[4]) / 2, (medians[2] + medians[3]) / 2
print(f"RESULT client-ab round={sys.argv[2]} logger_ms={logger:.3f} before_ms={before:.3f} after_ms={after:.3f}"
      f" after_minus_before_ms={after - before:+.3f} before_ratio={before / logger:.3f} after_ratio={after / logger:.3f}")
PY
done
