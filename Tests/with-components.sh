#!/usr/bin/env bash
# Runs a command (default: `swift test`) with the real components the tests need:
#   - a private systemd-journald in a private mount namespace (test records never
#     reach the host journal), its PID in NOTIFY_ROUTE_TEST_JOURNALD_PID (after a test
#     restarted it, in the file NOTIFY_ROUTE_TEST_JOURNALD_PIDFILE);
#   - dbus-daemon, python3-dbusmock and tmux on PATH: desktop tests start their own
#     session bus and notification daemon per test, terminal tests their own tmux server.
# Needs root (journald and unshare). Under CI=true a missing component fails the run.
set -euo pipefail

[ $# -gt 0 ] || set -- swift test --no-parallel

missing=()
for tool in dbus-daemon dbus-run-session gdbus tmux journalctl unshare; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
[ -x /lib/systemd/systemd-journald ] || missing+=("systemd-journald")
/usr/bin/python3 -c 'import dbusmock' 2>/dev/null || missing+=("python3-dbusmock")
if [ ${#missing[@]} -gt 0 ]; then
  echo "with-components: missing: ${missing[*]} (run: bash .ci/setup)" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "with-components: needs root for a private journald (unshare -m)" >&2
  exit 1
fi

export NOTIFY_ROUTE_TEST_COMPONENTS=1
exec unshare -m --propagation private bash -c '
  set -euo pipefail
  for d in /run/systemd/journal /run/log/journal /var/log/journal; do
    mkdir -p "$d"; mount -t tmpfs tmpfs "$d"
  done
  # journald under a loop that starts it again when it ends, as systemd does, so that a
  # test can restart it (kill the PID in NOTIFY_ROUTE_TEST_JOURNALD_PIDFILE) under a reader.
  T=$(mktemp -d /tmp/notify-route-journald.XXXXXX)
  : >/tmp/notify-route-journald.log
  ( while [ ! -e "$T/stop" ]; do
      /lib/systemd/systemd-journald >>/tmp/notify-route-journald.log 2>&1 &
      echo $! >"$T/pid.new"; mv "$T/pid.new" "$T/pid"
      { wait $!; } 2>/dev/null || true  # a test may kill it: no "Killed" line
    done ) &
  S=$!
  for _ in $(seq 100); do [ -S /run/systemd/journal/socket ] && [ -s "$T/pid" ] && break; sleep 0.05; done
  [ -S /run/systemd/journal/socket ] || { echo "with-components: journald did not start" >&2; exit 1; }
  export NOTIFY_ROUTE_TEST_JOURNALD_PID=$(cat "$T/pid") NOTIFY_ROUTE_TEST_JOURNALD_PIDFILE="$T/pid"
  rc=0
  "$@" || rc=$?
  touch "$T/stop"
  J=$(cat "$T/pid")
  kill -CONT $J 2>/dev/null || true
  kill $J 2>/dev/null || true
  wait $S 2>/dev/null || true
  rm -rf "$T"
  exit $rc
' with-components "$@"
