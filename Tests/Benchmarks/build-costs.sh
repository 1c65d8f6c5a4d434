#!/usr/bin/env bash
# What each option of the tuned build is worth, and what the default build's hardening costs:
#
#   bash Tests/Benchmarks/build-costs.sh [INSTALLED_DEFAULT]
#
# Links `notify-route` again from the objects of the tuned build (run.sh's .build-bench-release,
# built first when missing), one option at a time from the tuned link towards the default
# build's (the Makefile's), and measures every link side by side with `logger --journald` and
# `notify-send` in one hyperfine run: a journal and a desktop `send` handed to `serve`, and a
# journal `send` with no daemon (one-shot). INSTALLED_DEFAULT (such as /usr/local/bin/notify-route
# after `make install`) is measured beside them: the default build's objects, which differ from
# the tuned build's in two compiler options as well. Instructions of the one-shot send are
# counted with callgrind. RUNS_PER_ROUND and ROUNDS as in run.sh. Needs root, like run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SCRATCH=.build-bench-release
if [ "${BENCH_STAGE:-}" != inner ]; then
  source config/tuned/release-flags.sh
  swift build "${RELEASE_FLAGS[@]}" --scratch-path "$SCRATCH" --product notify-route "${LEAN_FLAGS[@]}" >&2
  swift build "${RELEASE_FLAGS[@]}" --scratch-path "$SCRATCH" --product notify-route-network >&2
  BIN=$(swift build "${RELEASE_FLAGS[@]}" --scratch-path "$SCRATCH" --show-bin-path)
  OUT=$ROOT/.build-costs
  rm -rf "$OUT" && mkdir -p "$OUT/static-all" "$OUT/static-cxx"
  for archive in libstdc++.a libsqlite3.a libyaml.a; do ln -sf "$(gcc -print-file-name=$archive)" "$OUT/static-all/"; done
  ln -sf "$(gcc -print-file-name=libstdc++.a)" "$OUT/static-cxx/"
  # The link as SwiftPM runs it (its build manifest), up to the options the tuned build adds.
  mapfile -t BASE < <(/usr/bin/python3 - "$SCRATCH/release.yaml" <<'PY'
import json, re, sys
text = open(sys.argv[1]).read()
entry = text[text.index('"C.notify-route-x86_64-unknown-linux-gnu-release.exe":'):]
args = json.loads(re.search(r'^    args: (\[.*\])$', entry, re.M).group(1))
args = args[:args.index("-g") + 1]
print("\n".join(a for a in args if a != "-v"))
PY
)
  # Each step keeps the ones above it: from the tuned link to the default build's.
  LLD=(-use-ld=lld)
  RELR=(-Xlinker -z -Xlinker pack-relative-relocs)
  ORDER=(-Xlinker "--symbol-ordering-file=$ROOT/config/tuned/startup.order" -Xlinker --no-warn-symbol-ordering)
  EXPORTS=(-Xlinker "--version-script=$ROOT/config/tuned/exports.map")
  NOPIE=(-Xlinker --no-pie)
  GCC=(-Xclang-linker -static-libgcc)
  STEPS=(
    "tuned|${LLD[*]} ${RELR[*]} ${ORDER[*]} ${EXPORTS[*]} ${NOPIE[*]} ${GCC[*]} -L$OUT/static-all"
    "+PIE|${LLD[*]} ${RELR[*]} ${ORDER[*]} ${EXPORTS[*]} ${GCC[*]} -L$OUT/static-all"
    "+libgcc_s.so|${LLD[*]} ${RELR[*]} ${ORDER[*]} ${EXPORTS[*]} -L$OUT/static-all"
    "+sqlite,yaml.so|${LLD[*]} ${RELR[*]} ${ORDER[*]} ${EXPORTS[*]} -L$OUT/static-cxx"
    "+libstdc++.so|${LLD[*]} ${RELR[*]} ${ORDER[*]} ${EXPORTS[*]}"
    "-version-script|${LLD[*]} ${RELR[*]} ${ORDER[*]}"
    "+no-export-dynamic|${LLD[*]} ${RELR[*]} ${ORDER[*]} -Xlinker --no-export-dynamic"
    "-ordering|${LLD[*]} ${RELR[*]} -Xlinker --no-export-dynamic"
    "-DT_RELR|${LLD[*]} -Xlinker --no-export-dynamic"
    "-lld|-Xlinker --no-export-dynamic"
    "+export-dynamic|"
  )
  VARIANTS=()
  for index in "${!STEPS[@]}"; do
    name=${STEPS[$index]%%|*}; read -r -a flags <<<"${STEPS[$index]#*|}"
    dir=$OUT/$index
    mkdir -p "$dir"
    args=("${BASE[@]}")
    for i in "${!args[@]}"; do [ "${args[$i]}" = -o ] && args[$((i + 1))]=$dir/notify-route; done
    "${args[@]}" "${flags[@]}"
    strip --strip-all "$dir/notify-route"
    cp "$BIN/notify-route-network" "$dir/"  # serve and the network sinks: the tuned one for every step
    VARIANTS+=("$name=$dir/notify-route")
    echo "step $index $name: $(stat -c %s "$dir/notify-route") bytes, $(readelf -h "$dir/notify-route" | awk '/Type:/ {print $2}')," \
      "$(ldd "$dir/notify-route" | grep -c '=>') shared objects, $(readelf -d "$dir/notify-route" | grep -cE 'RELR|RELA ') relocation tables" >&2
  done
  [ $# -gt 0 ] && VARIANTS+=("installed=$(realpath "$1")")
  export BENCH_STAGE=inner BENCH_BIN=$BIN
  source Tests/Benchmarks/bench-tools.sh
  exec bash Tests/with-components.sh dbus-run-session -- bash "$0" "${VARIANTS[@]}"
fi
source Tests/Benchmarks/bench-session.sh
printf 'MESSAGE=Disk almost full: 92%% used\nPRIORITY=4\nSYSLOG_IDENTIFIER=notify-route\n' >"$WORK/logger.txt"
RUNS=(--warmup 5 --runs "${RUNS_PER_ROUND:-30}"); ROUNDS=${ROUNDS:-3}
source Tests/Benchmarks/run-hf.sh
SOCK=$WORK/runtime/notify-route-bench.socket
"$BENCH_BIN/notify-route" serve --config "$WORK/bench.yaml" --socket "$SOCK" >"$WORK/serve.log" 2>&1 &
SERVE=$!
trap 'kill -TERM $SERVE 2>/dev/null; wait $SERVE 2>/dev/null; kill $MOCK $BUS 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 200); do [ -S "$SOCK" ] && break; sleep 0.05; done
DAEMON_JOURNAL=("logger --journald=$WORK/logger.txt"); DAEMON_DESKTOP=("notify-send 'Disk almost full' '92% used'")
ONESHOT_JOURNAL=("logger --journald=$WORK/logger.txt")
for variant in "$@"; do
  binary=${variant#*=}
  # Warm: the first answers of a fresh daemon may miss the client's greeting limit.
  for _ in 1 2 3; do "$binary" send --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal warm >/dev/null 2>&1 || true; done
  via=$("$binary" send --json --config "$WORK/bench.yaml" --socket "$SOCK" --sink journal check | grep -o '"via":"[a-z]*"')
  [ "$via" = '"via":"daemon"' ] || echo "build-costs.sh: ${variant%%=*} did not hand its send to the daemon: $via" >&2
  DAEMON_JOURNAL+=("$binary send --config $WORK/bench.yaml --socket $SOCK --sink journal 'Disk almost full' '92% used'")
  DAEMON_DESKTOP+=("$binary send --config $WORK/bench.yaml --socket $SOCK --sink desktop 'Disk almost full' '92% used'")
  ONESHOT_JOURNAL+=("$binary send --config $WORK/bench.yaml --socket $WORK/no-daemon.socket --sink journal 'Disk almost full' '92% used'")
done
run_hf costs-daemon-journal "${RUNS[@]}" "${DAEMON_JOURNAL[@]}"
run_hf costs-daemon-desktop "${RUNS[@]}" "${DAEMON_DESKTOP[@]}"
run_hf costs-oneshot-journal "${RUNS[@]}" "${ONESHOT_JOURNAL[@]}"
for variant in "$@"; do
  binary=${variant#*=}
  strip --strip-debug -o "$WORK/callgrind-client" "$binary" 2>/dev/null || cp "$binary" "$WORK/callgrind-client"
  timeout 300 valgrind --tool=callgrind --callgrind-out-file="$WORK/oneshot.callgrind" "$WORK/callgrind-client" send \
    --config "$WORK/bench.yaml" --socket "$WORK/no-daemon.socket" --sink journal 'Disk almost full' '92% used' 2>/dev/null || true
  echo "${variant%%=*} $(grep -m1 '^summary:' "$WORK/oneshot.callgrind" | awk '{print $2}')" >>"$WORK/instructions.txt"
done
/usr/bin/python3 - "$WORK" "$@" <<'PY'
import json, sys
work, variants = sys.argv[1], sys.argv[2:]
names = [v.split("=", 1)[0] for v in variants]
instructions = dict(line.split() for line in open(f"{work}/instructions.txt") if len(line.split()) == 2)
tables = {n: json.load(open(f"{work}/hf-costs-{n}.json"))["results"] for n in ("daemon-journal", "daemon-desktop", "oneshot-journal")}
ms = lambda r: r["median"] * 1000
peer = {n: ms(t[0]) for n, t in tables.items()}
print(f"peers: logger --journald {peer['daemon-journal']:.2f} / {peer['oneshot-journal']:.2f} ms, notify-send {peer['daemon-desktop']:.2f} ms (medians)")
print(f"{'link':<20}{'journal via serve':>22}{'desktop via serve':>22}{'journal one-shot':>22}{'instructions':>14}")
for i, name in enumerate(names, start=1):
    cells = [f"{ms(tables[n][i]):.2f} ms {ms(tables[n][i]) / peer[n]:.2f}x" for n in ("daemon-journal", "daemon-desktop", "oneshot-journal")]
    print(f"{name:<20}" + "".join(f"{c:>22}" for c in cells) + f"{int(instructions.get(name, 0)):>14,}")
PY
