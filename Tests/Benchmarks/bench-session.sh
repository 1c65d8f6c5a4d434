# Sourced by run.sh and startup-order.sh inside Tests/with-components.sh (a private
# journald): a private runtime and config directory, python-dbusmock's notification
# daemon on the session bus, and $WORK/bench.yaml, one desktop and one journal sink with
# no dedup (every run really sends; the embedded config's 10s dedup window would suppress
# the repeats to the journal). Removes it all on exit. Defines WORK.
WORK=$(mktemp -d /tmp/notify-route-bench.XXXXXX)
export XDG_RUNTIME_DIR=$WORK/runtime XDG_CONFIG_HOME=$WORK/config
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_CONFIG_HOME"
chmod 700 "$XDG_RUNTIME_DIR"
/usr/bin/python3 -m dbusmock --template notification_daemon \
  -p '{"capabilities": "actions body body-markup persistence"}' >"$WORK/dbusmock.log" 2>&1 &
MOCK=$!
trap 'rc=$?; kill $MOCK 2>/dev/null || true; wait $MOCK 2>/dev/null || true; rm -rf "$WORK"; exit $rc' EXIT
gdbus wait --session --timeout 10 org.freedesktop.Notifications
cat >"$WORK/bench.yaml" <<'YAML'
sinks:
  desktop: { kind: desktop, deadline: 1s }
  journal: { kind: journal, deadline: 1s }
routes:
  - { match: {}, to: [desktop, journal] }
YAML
