# Sourced by run.sh and startup-order.sh inside Tests/with-components.sh (a private
# journald): a private runtime and config directory, a session bus of its own,
# python-dbusmock's notification daemon on it, and $WORK/bench.yaml, one desktop and
# one journal sink with no dedup (every run really sends; the embedded config's 10s
# dedup window would suppress the repeats to the journal). Removes it all on exit.
# Defines WORK.
#
# The bus is hermetic: its config names one empty service directory and none of the
# host's, so a notification daemon installed here (dunst, mako) is never started by it
# and every run measures the mock. It replaces the bus dbus-run-session started.
WORK=$(mktemp -d /tmp/notify-route-bench.XXXXXX)
export XDG_RUNTIME_DIR=$WORK/runtime XDG_CONFIG_HOME=$WORK/config
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME" "$WORK/services"
chmod 700 "$XDG_RUNTIME_DIR"
cat >"$WORK/session.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=$WORK/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$WORK/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/>
  </policy>
</busconfig>
CONF
dbus-daemon --config-file="$WORK/session.conf" --nofork --nopidfile --print-address=1 >"$WORK/bus.address" 2>"$WORK/bus.log" &
BUS=$!
for _ in $(seq 100); do [ -s "$WORK/bus.address" ] && break; sleep 0.05; done
export DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/bus
/usr/bin/python3 -m dbusmock --template notification_daemon \
  -p '{"capabilities": "actions body body-markup persistence"}' >"$WORK/dbusmock.log" 2>&1 &
MOCK=$!
trap 'rc=$?; kill $MOCK $BUS 2>/dev/null || true; wait $MOCK $BUS 2>/dev/null || true; rm -rf "$WORK"; exit $rc' EXIT
gdbus wait --session --timeout 10 org.freedesktop.Notifications
cat >"$WORK/bench.yaml" <<'YAML'
sinks:
  desktop: { kind: desktop, deadline: 1s }
  journal: { kind: journal, deadline: 1s }
routes:
  - { match: {}, to: [desktop, journal] }
YAML
