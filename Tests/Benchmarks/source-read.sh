#!/usr/bin/env bash
# source-read.sh BIN_DIR [N]: how fast a `kind: journal` source of `notify-route serve`
# reads a backlog. N records (`seq N | systemd-cat -p err`) are written while the daemon is
# stopped; the daemon then starts on its saved place and the clock runs until the cursor it
# saves reaches the last record. Twice: a source that matches every record (rate-limited:
# 5 events, the rest counted) and one that matches none (each record read and tested only).
# Prints records/s and the daemon's CPU µs per record. Needs the private journald:
#   bash Tests/with-components.sh bash Tests/Benchmarks/source-read.sh .build/release 100000
set -euo pipefail
BIN=$(cd "$1" && pwd); N=${2:-100000}
[ -n "${NOTIFY_ROUTE_TEST_JOURNALD_PID:-}" ] || { echo "source-read: run it inside Tests/with-components.sh" >&2; exit 1; }
W=$(mktemp -d /tmp/notify-route-source-read.XXXXXX)
DAEMON=
cleanup() { [ -z "$DAEMON" ] || kill "$DAEMON" 2>/dev/null || true; rm -rf "$W"; }
trap cleanup EXIT
mkdir -m 700 "$W/run"
export XDG_RUNTIME_DIR=$W/run XDG_STATE_HOME=$W/state XDG_CONFIG_HOME=$W/config
DB=$XDG_RUNTIME_DIR/notify-route/state.db

saved_sequence() {  # the `i=` of the source's saved cursor, in decimal (0: none yet)
  python3 - "$DB" <<'PY' 2>/dev/null || echo 0
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("SELECT cursor FROM source_cursors WHERE source = 'bench'").fetchone()
print(int(dict(p.split("=", 1) for p in row[0].split(";"))["i"], 16) if row else 0)
PY
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

run_case() {  # run_case NAME MATCH
  local name=$1 match=$2 id="source-read-$1-$$"
  rm -f "$DB"*
  cat >"$W/config.yaml" <<YAML
sinks: { out: { kind: terminal, output: stdout } }
fallback: [out]
sources:
  bench:
    kind: journal
    match: { SYSLOG_IDENTIFIER: "$id", PRIORITY: "$match" }
    rate: { max: 5, per: 1h }
YAML
  # First start: the source places itself at the end of the journal and saves that place.
  "$BIN/notify-route" serve --config "$W/config.yaml" --socket "$W/socket" >"$W/$name.out" 2>"$W/$name.log" &
  DAEMON=$!
  for _ in $(seq 200); do grep -q "reading new journal records" "$W/$name.log" && break; sleep 0.05; done
  kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=

  seq "$N" | systemd-cat -t "$id" -p err
  local last=
  for _ in $(seq 600); do
    last=$(journalctl --no-pager -o json "SYSLOG_IDENTIFIER=$id" "MESSAGE=$N" | python3 -c '
import json, sys
for line in sys.stdin: print(int(dict(p.split("=", 1) for p in json.loads(line)["__CURSOR"].split(";"))["i"], 16))')
    [ -n "$last" ] && break; sleep 0.2
  done
  [ -n "$last" ] || { echo "source-read: journald never got record $N" >&2; exit 1; }

  local hz start end ticks
  hz=$(getconf CLK_TCK)
  start=$(date +%s.%N)
  "$BIN/notify-route" serve --config "$W/config.yaml" --socket "$W/socket" >>"$W/$name.out" 2>>"$W/$name.log" &
  DAEMON=$!
  while [ "$(saved_sequence)" -lt "$last" ]; do
    kill -0 "$DAEMON" 2>/dev/null || { echo "source-read: the daemon ended: $(cat "$W/$name.log")" >&2; exit 1; }
    sleep 0.02
  done
  end=$(date +%s.%N)
  ticks=$(cpu_ticks "$DAEMON")
  kill -TERM "$DAEMON"; wait "$DAEMON" || true; DAEMON=
  python3 - "$name" "$N" "$start" "$end" "$ticks" "$hz" <<'PY'
import sys
name, n, start, end, ticks, hz = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
seconds = end - start
print(f"RESULT source-read {name}: records={n} seconds={seconds:.2f} records_per_s={n / seconds:.0f} cpu_us_per_record={ticks / hz * 1e6 / n:.1f}")
PY
}

run_case every "<=7"
run_case none "<=2"
