#!/usr/bin/env bash
# The whole benchmark suite, from a release build, in one command; prints a table.
#
#   bash Tests/Benchmarks/run.sh            # full: the numbers of Tests/Benchmarks/README.md
#   bash Tests/Benchmarks/run.sh --short    # CI: small counts on the debug build, prints numbers, asserts nothing
#   BENCH_RELEASE=1 bash Tests/Benchmarks/run.sh --short   # small counts on the release build
#
# Needs root (a private journald, as Tests/with-components.sh starts for the tests).
# Whole-process latencies: hyperfine, ours side by side with the peers in the same run,
# against one python-dbusmock notification daemon on a private session bus and one
# private journald. In-process numbers: the notify-route-bench executable.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MODE=full
[ "${1:-}" = --short ] && MODE=short

if [ "${BENCH_STAGE:-}" != inner ]; then
  source Tests/Benchmarks/bench-tools.sh
  if [ "$MODE" = full ] || [ "${BENCH_RELEASE:-}" = 1 ]; then
    # The release options of release-flags.sh (Tests/Benchmarks/README.md, "What each option of the tuned build buys", says why each).
    source config/tuned/release-flags.sh
    BUILD=(swift build "${RELEASE_FLAGS[@]}"
      --scratch-path .build-bench-release)
  else
    # CI: on top of the debug build .ci/run has just made (a cold release build takes
    # over 4 minutes on 2 cores). The numbers only show that everything still runs.
    BUILD=(swift build)
  fi
  # Relinked every time: the build does not see a change of startup.order, which only the link reads.
  rm -f "$("${BUILD[@]}" --show-bin-path)/notify-route"
  "${BUILD[@]}" --product notify-route ${LEAN_FLAGS[@]+"${LEAN_FLAGS[@]}"} >/tmp/notify-route-bench-build.log 2>&1 ||
    { tail -30 /tmp/notify-route-bench-build.log; exit 1; }
  # What notify-route runs for a config with a network sink (the Alertmanager rows, serve).
  "${BUILD[@]}" --product notify-route-network >>/tmp/notify-route-bench-build.log 2>&1 ||
    { tail -30 /tmp/notify-route-bench-build.log; exit 1; }
  "${BUILD[@]}" --product notify-route-bench >>/tmp/notify-route-bench-build.log 2>&1 ||
    { tail -30 /tmp/notify-route-bench-build.log; exit 1; }
  BIN=$("${BUILD[@]}" --show-bin-path)
  cc -O2 -o "$BIN/journal-sendv" Tests/Benchmarks/journal-sendv.c -lsystemd
  # The floor of any Swift command: a static Swift program that prints one line, linked
  # as the release build is (the debug build of --short links it plainly).
  printf 'print("hello")\n' >"$BIN/swift-hello.swift"
  if [ "$MODE" = full ] || [ "${BENCH_RELEASE:-}" = 1 ]; then
    swiftc -O -static-stdlib -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -L "$ROOT/.build-static" \
      "$BIN/swift-hello.swift" -o "$BIN/swift-hello"
  else
    swiftc -O -static-stdlib "$BIN/swift-hello.swift" -o "$BIN/swift-hello"
  fi
  export BENCH_STAGE=inner BENCH_BIN=$BIN
  exec bash Tests/with-components.sh dbus-run-session -- bash "$0" "$@"
fi

# ---- inside a private journald (mount namespace) and a private session bus ----
BIN=$BENCH_BIN
source Tests/Benchmarks/bench-session.sh
printf 'MESSAGE=Disk almost full: 92%% used\nPRIORITY=4\nSYSLOG_IDENTIFIER=notify-route\n' >"$WORK/logger.txt"
NR="$BIN/notify-route"
"$NR" send --config "$WORK/bench.yaml" --sink desktop "warm" "up" >/dev/null
"$NR" send --config "$WORK/bench.yaml" --sink journal "warm" "up" >/dev/null

# The runs of each comparison are split into rounds (hyperfine runs all of one command,
# then all of the next): pooled over rounds, a change of the machine's load in the
# middle of a comparison falls on both sides instead of on one.
if [ "$MODE" = short ]; then RUNS=(--warmup 3 --runs 20); SLOW=(--warmup 1 --runs 3); ROUNDS=1
else RUNS=(--warmup 5 --runs 50); SLOW=(--warmup 2 --runs 10); ROUNDS=4; fi
source Tests/Benchmarks/run-hf.sh
run_hf desktop "${RUNS[@]}" \
  "notify-send 'Disk almost full' '92% used'" \
  "$NR send --config $WORK/bench.yaml --sink desktop 'Disk almost full' '92% used'"
run_hf journal "${RUNS[@]}" \
  "logger --journald=$WORK/logger.txt" \
  "$NR send --config $WORK/bench.yaml --sink journal 'Disk almost full' '92% used'"
# The same sends handed to `notify-route serve`.
source Tests/Benchmarks/daemon-send.sh
run_hf start "${RUNS[@]}" "$NR --version" "true"
# Where the journal send's time goes: each row adds one stage to the one before.
run_hf breakdown "${RUNS[@]}" \
  "true" \
  "$BIN/journal-sendv 1" \
  "$BIN/swift-hello" \
  "$NR --version" \
  "$NR send --config $WORK/bench.yaml --sink journal 'Disk almost full' '92% used'" \
  "$NR send --dry-run --config $WORK/bench.yaml --sink journal 'Disk almost full' '92% used'"
if [ -x /tmp/apprise-venv/bin/apprise ]; then
  run_hf apprise "${SLOW[@]}" "/tmp/apprise-venv/bin/apprise -t 'Disk almost full' -b '92% used' dbus://?image=no"
fi

# In-process benchmarks.
if [ "$MODE" = short ]; then ROUTE=20000; KEYS=100000; JOURNAL=10000; STORM=2000
else ROUTE=1000000; KEYS=10000000; JOURNAL=100000; STORM=100000; fi
# The state database: per-event cost at 1k, 100k and 1M keys; ingest of distinct keys through the CLI.
if [ "$MODE" = short ]; then STATE=2000; INGEST=20000; else STATE=20000; INGEST=1000000; fi
# A send to a real Alertmanager on loopback: one-shot, through `serve`, and a terminal send beside them.
if [ "$MODE" = short ]; then AMRUNS=20; else AMRUNS=200; fi
gdbus call --session --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications \
  --method org.freedesktop.DBus.Mock.ClearCalls >/dev/null
{
  "$BIN/notify-route-bench" route "$ROUTE"
  # The same events through the state and the types alone, without the router's logic.
  "$BIN/notify-route-bench" floor "$ROUTE"
  "$BIN/notify-route-bench" memory "$KEYS"
  "$BIN/notify-route-bench" state "$STATE"
  bash Tests/Benchmarks/state-ingest.sh "$BIN" "$INGEST"
  bash Tests/Benchmarks/alertmanager-send.sh "$BIN" "$AMRUNS" "$WORK/hf-alertmanager.json" ||
    echo "alertmanager-send.sh failed (is prometheus-alertmanager installed? .ci/setup)"
  "$BIN/journal-sendv" "$JOURNAL"
  "$BIN/notify-route-bench" journal "$JOURNAL"
  gdbus call --session --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications \
    --method org.freedesktop.DBus.Mock.ClearCalls >/dev/null
  # The daemon's throughput from 8 clients, and its memory after MARK and TOTAL events.
  if [ "$MODE" = short ]; then MARK=8000 TOTAL=16000; else MARK=1000000 TOTAL=10000000; fi
  source Tests/Benchmarks/daemon-throughput.sh
  "$BIN/notify-route-bench" storm "$STORM"
  gdbus call --session --dest org.freedesktop.Notifications --object-path /org/freedesktop/Notifications \
    --method org.freedesktop.DBus.Mock.GetCalls >"$WORK/storm-calls.txt"
  calls=$(grep -o "'Notify'" "$WORK/storm-calls.txt" | wc -l)
  # The summary of the last Notify: what the desktop shows at the end of the storm.
  last=$(grep -o "'Database down[^']*'" "$WORK/storm-calls.txt" | tail -1 | tr -d "'" | tr ' ' '_')
  echo "RESULT storm-dbus notify_calls=$calls last_summary=${last:-none}"
  # Threads each command starts (clone3/clone calls, strace -f): each costs a stack, a
  # malloc arena and page faults in a process that lives a few milliseconds.
  threads() { strace -f -qq -e trace=clone,clone3 -o "$WORK/clones.txt" "$@" >/dev/null 2>&1 || true; grep -c 'clone' "$WORK/clones.txt"; }
  echo "RESULT threads desktop=$(threads "$NR" send --config "$WORK/bench.yaml" --sink desktop "Disk almost full" "92% used")" \
    "notify_send=$(threads notify-send "Disk almost full" "92% used")" \
    "journal=$(threads "$NR" send --config "$WORK/bench.yaml" --sink journal "Disk almost full" "92% used")" \
    "logger=$(threads logger --journald="$WORK/logger.txt")"
  # What every command maps at start-up: the binary's own size and the shared objects it needs.
  echo "RESULT binary size_mb=$(( $(stat -c %s "$NR") / 1048576 )) needed=$(readelf -d "$NR" | grep -c NEEDED)" \
    "loaded_at_version=$(LD_TRACE_LOADED_OBJECTS=1 "$NR" | grep -c '=>\|ld-linux')" \
    "ordered_found=$(comm -12 <(sort -u config/tuned/startup.order) <(nm --defined-only "$NR" | awk '{print $NF}' | sort -u) | wc -l)" \
    "ordered=$(wc -l <config/tuned/startup.order)"
} | tee "$WORK/results.txt"

# ---- the table ----
BUILT=debug; { [ "$MODE" = full ] || [ "${BENCH_RELEASE:-}" = 1 ]; } && BUILT=release
/usr/bin/python3 - "$WORK" "$MODE" "$BUILT" <<'PY'
import json, os, sys, platform, subprocess
work, mode, built = sys.argv[1], sys.argv[2], sys.argv[3]
def hf(name):
    path = f"{work}/hf-{name}.json"
    if not os.path.exists(path): return []
    return [(r["command"], r["median"] * 1000, r["stddev"] * 1000 if r.get("stddev") else 0.0)
            for r in json.load(open(path))["results"]]
res = {}
for line in open(f"{work}/results.txt"):
    if line.startswith("RESULT "):
        parts = line.split()
        res[parts[1]] = dict(p.split("=", 1) for p in parts[2:])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal"))) // 1024
print(f"\nnotify-route benchmarks ({mode}, {built} build{'' if built == 'release' else ': NOT comparable'}): {os.cpu_count()} cores, {cpu}, {mem} MB RAM, "
      f"{platform.platform()}, {subprocess.run(['swift', '--version'], capture_output=True, text=True).stdout.splitlines()[0] if True else ''}")
print("\n| benchmark | ours | peer | ratio | target |\n|---|---|---|---|---|")
def short(cmd):
    return cmd.split("/")[-1] if cmd.startswith("/") else cmd
def row(name, ours, peer, target, fmt="{:.2f} ms"):
    (oc, om, osd), (pc, pm, psd) = ours, peer
    print(f"| {name} | {fmt.format(om)} ± {osd:.2f} | `{short(pc)[:40]}` {fmt.format(pm)} ± {psd:.2f} | {om / pm:.2f}× | {target} |")
d = hf("desktop"); j = hf("journal"); s = hf("start"); a = hf("apprise")
if len(d) == 2: row("send --sink desktop (dbusmock)", d[1], d[0], "≤ 1.25× notify-send")
if len(j) == 2: row("send --sink journal", j[1], j[0], "≤ 1.5× logger --journald")
if len(s) == 2: row("--version (cold start)", s[0], s[1], "≤ 3 ms")
dd, dj = hf("daemon-desktop"), hf("daemon-journal")
if len(dd) >= 2: row("send --sink desktop through serve (dbusmock)", dd[1], dd[0], "≤ 0.5× notify-send")
if len(dd) == 3: row("the same, BEFORE_NR's client", dd[2], dd[0], "")
if len(dj) >= 2: row("send --sink journal through serve", dj[1], dj[0], "≤ 1.0× logger --journald")
if len(dj) == 3: row("the same, BEFORE_NR's client", dj[2], dj[0], "")
am = hf("alertmanager")
if len(am) == 3:
    row("send to Alertmanager on loopback, one-shot", am[0], am[2], "")
    row("send to Alertmanager on loopback, through serve", am[1], am[2], "")
dt, dr, dp = res.get("daemon-throughput", {}), res.get("daemon-throughput-rest", {}), res.get("daemon-throughput-piped", {})
if dt:
    rss = ", ".join(f"{k[len('rss_mb_at_'):]} events: {v} MB" for d_ in (dt, dr, dp) for k, v in d_.items() if k.startswith("rss_mb_at_"))
    print(f"| serve: {dt['events']} events from {dt['clients']} clients ({dt['window']} in flight each, one write an answer) into counting sinks | "
          f"{int(dt['events_per_s']):,} events/s, p50 {dt['p50_us']} µs, p99 {dt['p99_us']} µs; resident {rss} | | | ≥ 100,000 events/s, memory flat |")
if dp:
    print(f"| the same, {dp['events']} more from clients that pipeline (one write a read) | "
          f"{int(dp['events_per_s']):,} events/s, p50 {dp['p50_us']} µs, p99 {dp['p99_us']} µs | | | ≥ 100,000 events/s |")
if a and d:
    print(f"| Apprise `dbus://?image=no` vs send --sink desktop | {d[1][1]:.2f} ms | apprise {a[0][1]:.1f} ms | "
          f"{a[0][1] / d[1][1]:.0f}× faster | ≥ 60× faster |")
r = res.get("route", {})
if r:
    print(f"| routing, 20 routes, dedup + replace, 2 recording sinks | {int(r['events_per_s']):,} events/s, p50 {r['p50_us']} µs, p99 {r['p99_us']} µs | | | ≥ 1,000,000 events/s |")
fl = res.get("floor", {})
if fl:
    print(f"| the same events through the state and the types alone (no router logic) | {int(fl['events_per_s']):,} events/s, p50 {fl['p50_us']} µs, p99 {fl['p99_us']} µs | | | (floor of the above) |")
jc, js = res.get("journal-c", {}), res.get("journal", {})
if jc and js:
    print(f"| journal sink throughput ({js['records']} records) | {int(js['records_per_s']):,} records/s | C sd_journal_sendv loop {int(jc['records_per_s']):,} records/s | "
          f"{int(js['records_per_s']) / int(jc['records_per_s']) * 100:.0f}% | ≥ 80% of C |")
st, sd = res.get("storm", {}), res.get("storm-dbus", {})
if st:
    print(f"| event storm: {st['events']} identical errors in one burst | {sd.get('notify_calls', '?')} D-Bus Notify calls, "
          f"last shows \"{sd.get('last_summary', '?').replace('_', ' ')}\"; "
          f"{st['counted']} counted ({st['delivered']} shown, {st['duplicates']} duplicates), {st['seconds']} s | | | ≤ 5 calls, all counted |")
m = res.get("memory", {})
if m:
    marks = ", ".join(f"{k[len('rss_mb_at_'):]} keys: {v} MB" for k, v in m.items() if k.startswith("rss_mb_at_"))
    print(f"| memory, distinct dedup keys, max_entries 10000 | {marks}; peak {m['peak_rss_mb']} MB ({int(m['events_per_s']):,} events/s) | | | bounded |")
th = res.get("threads", {})
if th:
    print(f"| threads started: send --sink desktop / journal | {th['desktop']} / {th['journal']} | notify-send {th['notify_send']} / logger {th['logger']} | | |")
bi = res.get("binary", {})
if bi:
    print(f"| binary | {bi['size_mb']} MB, {bi['needed']} shared objects needed, {bi['loaded_at_version']} loaded by --version, "
          f"{bi['ordered_found']} of the {bi['ordered']} functions of startup.order found | | | |")
b = hf("breakdown")
if len(b) == 6:
    names = ["`true` (spawn floor)", "C: libsystemd + one sd_journal_sendv", "a static Swift program printing one line (the floor of any Swift command)",
             "`notify-route --version` (load, relocate, Swift runtime; no parser)",
             "`send --sink journal` (+ argument parsing, config, router, state file, one datagram, exit)",
             "`send --dry-run --sink journal` (the same without state file and datagram, plus the plan printed)"]
    print("\n| journal send, stage by stage | median | step |\n|---|---|---|")
    base = {1: 0, 4: 3}  # the C send over `true`; our send over our --version
    for index, (label, (cmd, med, sd)) in enumerate(zip(names, b)):
        step = f"{med - b[base[index]][1]:+.2f} ms" if index in base else ""
        print(f"| {label} | {med:.2f} ms | {step} |")
PY
