#!/usr/bin/env bash
# The daemon's benchmarks alone (issue 22 item 7), from binaries already built:
#
#   bash Tests/Benchmarks/daemon.sh BIN [send] [throughput]   # default: both
#
# BIN holds notify-route and notify-route-bench (run.sh's release build:
# .build-bench-release/release). `send`: daemon-send.sh (hyperfine, `send` through serve
# beside notify-send, logger --journald and Apprise). `throughput`: daemon-throughput.sh
# (MARK and TOTAL events, default 1M and 10M). BEFORE_NR, RUNS_PER_ROUND, ROUNDS as in
# run.sh. Needs root, like run.sh (a private journald).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${BENCH_STAGE:-}" != inner ]; then
  BENCH_BIN=$(cd "$1" && pwd); shift
  source Tests/Benchmarks/bench-tools.sh
  export BENCH_STAGE=inner BENCH_BIN
  exec bash Tests/with-components.sh dbus-run-session -- bash "$0" "$@"
fi
BIN=$BENCH_BIN
PARTS=("$@")
[ ${#PARTS[@]} -gt 0 ] || PARTS=(send throughput)
source Tests/Benchmarks/bench-session.sh
printf 'MESSAGE=Disk almost full: 92%% used\nPRIORITY=4\nSYSLOG_IDENTIFIER=notify-route\n' >"$WORK/logger.txt"
NR="$BIN/notify-route"
RUNS=(--warmup 5 --runs "${RUNS_PER_ROUND:-50}"); SLOW=(--warmup 2 --runs 10); ROUNDS=${ROUNDS:-4}
source Tests/Benchmarks/run-hf.sh
for part in "${PARTS[@]}"; do
  case $part in
    send) source Tests/Benchmarks/daemon-send.sh ;;
    throughput) source Tests/Benchmarks/daemon-throughput.sh ;;
    *) echo "daemon.sh: unknown part $part (send, throughput)" >&2; exit 64 ;;
  esac
done
