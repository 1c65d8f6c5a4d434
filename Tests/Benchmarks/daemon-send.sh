# To be sourced by run.sh inside its private journald and session bus (bench-session.sh): a
# `send` handed to `notify-route serve` against its peers, medians of one hyperfine run
# per sink with every command side by side. Needs NR, WORK and run_hf; BEFORE_NR, when
# set, is an older binary measured beside NR (before/after a change of the client path).
#
# Nothing here may end the sourcing script (set -e) while the daemon runs: a `serve` left
# behind keeps run.sh's output open, and whoever reads it waits forever (the "did not
# finish in 10 minutes" of an earlier run: the callgrind client exited non-zero).
SOCK=$WORK/runtime/notify-route-bench.socket
"$NR" serve --config "$WORK/bench.yaml" --socket "$SOCK" >"$WORK/serve.log" 2>&1 &
SERVE=$!
stop_serve() {
  kill -TERM "$SERVE" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$SERVE" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$SERVE" 2>/dev/null || true
  wait "$SERVE" 2>/dev/null || echo "daemon-send.sh: serve exited with $?" >&2
}
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
# Warm up until the daemon takes the sends (its first answers may come after the client's
# 100 ms greeting limit on a loaded machine, and the client then routes locally).
taken=no
for _ in $(seq 20); do
  "$NR" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink desktop "warm" "up" >/dev/null 2>&1 || true
  if "$NR" send --json --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal "check" 2>/dev/null | grep -q '"via":"daemon"'; then
    taken=yes; break
  fi
done
[ $taken = yes ] || echo "daemon-send.sh: the daemon did not take the sends: $(cat "$WORK/serve.log")" >&2
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
# Under callgrind the client misses the 100 ms greeting limit and routes locally, so the
# count is of a local send unless the answer says "via":"daemon".
if command -v valgrind >/dev/null; then
  for binary in "$NR" ${BEFORE_NR:+"$BEFORE_NR"}; do
    # valgrind cannot read the release build's debug info ("possibly corrupted"): a copy without it.
    strip --strip-debug -o "$WORK/callgrind-client" "$binary" 2>/dev/null || cp "$binary" "$WORK/callgrind-client"
    via=$(timeout 300 valgrind --tool=callgrind --callgrind-out-file="$WORK/client.callgrind" \
      "$WORK/callgrind-client" send --json --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal 'Disk almost full' '92% used' 2>"$WORK/callgrind.log" |
      grep -o '"via":"[a-z]*"' | cut -d'"' -f4) || true
    echo "RESULT daemon-client binary=$binary via=${via:-?} instructions=$(grep -m1 '^summary:' "$WORK/client.callgrind" 2>/dev/null | awk '{print $2}')"
  done
fi
run_hf daemon-desktop "${RUNS[@]}" "${DESKTOP[@]}" || true
run_hf daemon-journal "${RUNS[@]}" "${JOURNAL[@]}" || true
# Apprise's CLI on the same notification (its dbus:// plugin; without its default image,
# which makes dbusmock log about 1 MB a call): 10 runs, it takes 0.4 s each.
if [ -x /tmp/apprise-venv/bin/apprise ]; then
  run_hf daemon-apprise "${SLOW[@]}" "/tmp/apprise-venv/bin/apprise -t 'Disk almost full' -b '92% used' dbus://?image=no" \
    "$(daemon_send "$NR" desktop)" || true
fi
stop_serve
/usr/bin/python3 - "$WORK" <<'PY' || true
import json, sys
work = sys.argv[1]
def medians(name):
    return [r["median"] * 1000 for r in json.load(open(f"{work}/hf-{name}.json"))["results"]]
d, j = medians("daemon-desktop"), medians("daemon-journal")
extra = f" before_desktop_ms={d[2]:.2f} before_journal_ms={j[2]:.2f}" if len(d) > 2 and len(j) > 2 else ""
try:
    a = medians("daemon-apprise")
    extra += f" apprise_ms={a[0]:.1f} apprise_ratio={a[0] / a[1]:.0f}"
except FileNotFoundError:
    pass
print(f"RESULT daemon-send desktop_ms={d[1]:.2f} notify_send_ms={d[0]:.2f} journal_ms={j[1]:.2f} logger_ms={j[0]:.2f}"
      f" desktop_ratio={d[1] / d[0]:.2f} journal_ratio={j[1] / j[0]:.2f}{extra}")
PY
