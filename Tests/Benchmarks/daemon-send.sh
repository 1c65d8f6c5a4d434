# To be sourced by run.sh inside its private journald and session bus (bench-session.sh): a
# `send` handed to `notify-route serve` against its peers, medians of one hyperfine run
# per sink with every command side by side. Needs NR, WORK and run_hf; BEFORE_NR, when
# set, is an older binary measured beside NR (before/after a change of the client path).
SOCK=$WORK/runtime/notify-route-bench.socket
"$NR" serve --config "$WORK/bench.yaml" --socket "$SOCK" 2>"$WORK/serve.log" &
SERVE=$!
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
"$NR" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink desktop "warm" "up" >/dev/null
"$NR" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal "warm" "up" >/dev/null
if ! "$NR" send --json --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal "check" | grep -q '"via":"daemon"'; then
  echo "daemon-send.sh: the daemon did not take the send: $(cat "$WORK/serve.log")" >&2
fi
daemon_send() {  # binary, sink
  echo "$1 send --config $WORK/bench.yaml --socket $SOCK --sink $2 'Disk almost full' '92% used'"
}
DESKTOP=("notify-send 'Disk almost full' '92% used'" "$(daemon_send "$NR" desktop)")
JOURNAL=("logger --journald=$WORK/logger.txt" "$(daemon_send "$NR" journal)")
if [ -n "${BEFORE_NR:-}" ]; then
  DESKTOP+=("$(daemon_send "$BEFORE_NR" desktop)")
  JOURNAL+=("$(daemon_send "$BEFORE_NR" journal)")
fi
# Instructions of the client, counted by callgrind: a before/after that load does not blur.
if command -v valgrind >/dev/null; then
  for binary in "$NR" ${BEFORE_NR:+"$BEFORE_NR"}; do
    valgrind --tool=callgrind --callgrind-out-file="$WORK/client.callgrind" \
      "$binary" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal 'Disk almost full' '92% used' 2>"$WORK/callgrind.log" >/dev/null
    echo "RESULT daemon-client binary=$binary instructions=$(grep -m1 '^summary:' "$WORK/client.callgrind" | awk '{print $2}')"
  done
fi
run_hf daemon-desktop "${RUNS[@]}" "${DESKTOP[@]}"
run_hf daemon-journal "${RUNS[@]}" "${JOURNAL[@]}"
kill -TERM $SERVE
wait $SERVE || echo "daemon-send.sh: serve exited with $?" >&2
/usr/bin/python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
def medians(name):
    return [r["median"] * 1000 for r in json.load(open(f"{work}/hf-{name}.json"))["results"]]
d, j = medians("daemon-desktop"), medians("daemon-journal")
before = f" before_desktop_ms={d[2]:.2f} before_journal_ms={j[2]:.2f}" if len(d) > 2 and len(j) > 2 else ""
print(f"RESULT daemon-send desktop_ms={d[1]:.2f} notify_send_ms={d[0]:.2f} journal_ms={j[1]:.2f} logger_ms={j[0]:.2f}{before}")
PY
