# To be sourced by run.sh inside its private journald and session bus (bench-session.sh):
# the daemon (`notify-route-bench serve`: RouterDaemon as `notify-route serve` runs it,
# with its state database and history, but a counting sink in place of real ones, so that
# the daemon is measured and not a sink) fed by daemon-load.c (8 clients, each on its own
# connection with up to 64 requests in flight): events/s, p50 and p99 latency per event
# (request written to answer read), and the daemon's resident memory after the first
# MARK events and after TOTAL; then TOTAL more from clients that pipeline (daemon-load's
# `refill=read`: a window refilled once per read of answers, not once per answer), and the
# memory after them. Needs BIN and WORK; sets nothing.
#   MARK, TOTAL: events in all (default 1,000,000 and 10,000,000; run.sh --short: small).
MARK=${MARK:-1000000} TOTAL=${TOTAL:-10000000}
cc -O2 -pthread -o "$BIN/daemon-load" Tests/Benchmarks/daemon-load.c
LOAD_SOCK=$WORK/runtime/notify-route-load.socket
BENCH_STATE_DIR=$WORK "$BIN/notify-route-bench" serve "$LOAD_SOCK" >"$WORK/load-serve.log" 2>&1 &
LOAD_SERVE=$!
for _ in $(seq 400); do [ -S "$LOAD_SOCK" ] && break; sleep 0.05; done
rss_mb() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$LOAD_SERVE/status"; }
if [ -S "$LOAD_SOCK" ]; then
  first=$(timeout 1200 "$BIN/daemon-load" "$LOAD_SOCK" 8 $((MARK / 8)) 64 counting || true)
  rss_first=$(rss_mb)
  rest=$(timeout 3600 "$BIN/daemon-load" "$LOAD_SOCK" 8 $(((TOTAL - MARK) / 8)) 64 counting || true)
  rss_total=$(rss_mb)
  piped=$(timeout 3600 "$BIN/daemon-load" "$LOAD_SOCK" 8 $((TOTAL / 8)) 64 counting refill=read || true)
  rss_piped=$(rss_mb)
  echo "${first:-RESULT daemon-throughput failed=1} rss_mb_at_${MARK}=$rss_first"
  echo "${rest/daemon-throughput/daemon-throughput-rest} rss_mb_at_${TOTAL}=$rss_total"
  echo "${piped/daemon-throughput/daemon-throughput-piped} rss_mb_at_$((2 * TOTAL))=$rss_piped"
else
  echo "daemon-throughput.sh: serve did not listen: $(cat "$WORK/load-serve.log")" >&2
fi
kill -TERM $LOAD_SERVE 2>/dev/null || true
for _ in $(seq 100); do kill -0 $LOAD_SERVE 2>/dev/null || break; sleep 0.1; done
kill -KILL $LOAD_SERVE 2>/dev/null || true
wait $LOAD_SERVE 2>/dev/null || true
