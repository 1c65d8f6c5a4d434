#!/usr/bin/env bash
# `ingest` of N JSON lines, each with a dedup key of its own, through the built CLI into the
# terminal sink (its output to /dev/null), the state in a tmpfs runtime directory (as
# $XDG_RUNTIME_DIR is): events/s over each twentieth of the run, so that a slowdown as the
# state fills shows. MAX_ENTRIES is `state.max_entries` (default 10,000: eviction all along).
#
#   bash Tests/Benchmarks/state-ingest.sh BIN_DIR [N] [MAX_ENTRIES]
set -euo pipefail
BIN=$1; N=${2:-1000000}; MAX=${3:-10000}
WORK=$(mktemp -d /dev/shm/notify-route-ingest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -m 700 "$WORK/runtime"
cat >"$WORK/c.yaml" <<YAML
sinks: { tty: { kind: terminal } }
routes: [ { to: [tty], dedup: { window: 10m } } ]
state: { max_entries: $MAX }
YAML
/usr/bin/python3 - "$N" "$BIN/notify-route" "$WORK" "$MAX" <<'PY'
import os, subprocess, sys, time
n, nr, work, maximum = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
env = dict(os.environ, XDG_RUNTIME_DIR=work + "/runtime", NO_COLOR="1")
child = subprocess.Popen([nr, "ingest", "--config", work + "/c.yaml"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
step = max(n // 20, 1)
start = last = time.monotonic()
curve = []
for i in range(n):
    child.stdin.write(b'{"title":"event %d","dedup_key":"key %d"}\n' % (i, i))
    if (i + 1) % step == 0:
        # The pipe holds at most ~1,500 lines: what was written is what ingest has taken.
        child.stdin.flush()
        now = time.monotonic()
        curve.append((i + 1, step / (now - last)))
        last = now
child.stdin.close()
status = child.wait()
total = time.monotonic() - start
rows = subprocess.run(["sqlite3", work + "/runtime/notify-route/state.db", "SELECT count(*) FROM dedup"],
                      capture_output=True, text=True).stdout.strip()
print("ingest curve (lines: events/s): " + ", ".join(f"{k}: {int(v)}" for k, v in curve))
print(f"RESULT ingest lines={n} max_entries={maximum} exit={status} seconds={total:.1f} events_per_s={int(n / total)} "
      f"min_events_per_s={int(min(v for _, v in curve))} max_events_per_s={int(max(v for _, v in curve))} windows_at_end={rows}")
PY
