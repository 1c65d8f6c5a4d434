#!/usr/bin/env bash
# How long `notify-route send` to a real Alertmanager on loopback takes: one-shot (the
# CLI posts itself) and through the daemon (`serve` posts over its kept-alive connection),
# beside a `send` to a sink that needs no network, in one hyperfine run.
#
#   bash Tests/Benchmarks/alertmanager-send.sh BIN_DIR [RUNS] [JSON]
#
# Prints hyperfine's summary and one `RESULT alertmanager-send` line (medians in ms, the
# alerts Alertmanager holds at the end); with JSON, hyperfine's results are copied there
# (run.sh makes its table rows from them). Needs prometheus-alertmanager (.ci/setup) and hyperfine.
set -euo pipefail
BIN=${1:?usage: alertmanager-send.sh BIN_DIR [RUNS] [JSON]}
RUNS=${2:-200}
JSON=${3:-}
WORK=$(mktemp -d /tmp/notify-route-am-bench.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

AM_PORT=$(port)
cat >"$WORK/am.yml" <<YAML
route: { receiver: none, group_by: ['...'] }
receivers: [{ name: none }]
YAML
prometheus-alertmanager --config.file="$WORK/am.yml" --storage.path="$WORK/am" \
  --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= >"$WORK/am.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$AM_PORT/-/ready" >/dev/null && break; sleep 0.1; done

cat >"$WORK/config.yaml" <<YAML
sinks:
  am: { kind: alertmanager, url: "http://127.0.0.1:$AM_PORT", instance: bench }
  out: { kind: terminal, output: stdout }
routes:
  - match: { source: am }
    to: [am]
fallback: [out]
YAML
mkdir -m 700 "$WORK/runtime"
export XDG_RUNTIME_DIR=$WORK/runtime NO_COLOR=1
"$BIN/notify-route" serve --config "$WORK/config.yaml" --socket "$WORK/socket" 2>"$WORK/serve.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$WORK/socket" ] && break; sleep 0.05; done

SEND=("$BIN/notify-route" send --config "$WORK/config.yaml")
hyperfine -N --style basic --warmup 10 --runs "$RUNS" --export-json "$WORK/result.json" \
  -n "one-shot to Alertmanager" "env NOTIFY_ROUTE_SOCKET=/nonexistent ${SEND[*]} -s am -r bench Disk-full" \
  -n "through the daemon to Alertmanager" "env NOTIFY_ROUTE_SOCKET=$WORK/socket ${SEND[*]} -s am -r bench Disk-full" \
  -n "one-shot to the terminal (no network)" "env NOTIFY_ROUTE_SOCKET=/nonexistent ${SEND[*]} Disk-full"
active=$(curl -s "http://127.0.0.1:$AM_PORT/api/v2/alerts" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo "alerts held by Alertmanager: $active (one: every send updated the same alert)"
[ -n "$JSON" ] && cp "$WORK/result.json" "$JSON"
python3 - "$WORK/result.json" "$active" <<'PY'
import json, sys
ms = [f"{r['median'] * 1000:.2f}" for r in json.load(open(sys.argv[1]))["results"]]
print(f"RESULT alertmanager-send one_shot_ms={ms[0]} daemon_ms={ms[1]} terminal_ms={ms[2]} alerts={sys.argv[2]}")
PY
