#!/usr/bin/env bash
# Builds the libFuzzer targets (-sanitize=fuzzer) and runs each for a bounded time from
# its committed seed corpus:  bash Tests/Fuzz/run.sh [seconds per target, default 60]
#
# New inputs libFuzzer finds go to a scratch copy of the corpus, not into the repository.
# A crash, a hang (-timeout) or a memory blow-up (-rss_limit_mb) fails the run and leaves
# the input in .build-fuzz/artifacts/; keep it under Tests/Fuzz/corpus/<target>/ once
# fixed, so that every later run (and the plain replayer) tries it first.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
scratch=.build-fuzz
# Let libFuzzer, not the Swift runtime's backtracer, handle a crash, so it writes the input out.
export SWIFT_BACKTRACE=enable=no
# One executable holds every target; NOTIFY_ROUTE_FUZZ_TARGET picks one (Entry.swift).
targets=(fuzz-config fuzz-event fuzz-request)

swift build --scratch-path "$scratch" --product notify-route-fuzz \
  -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -DFUZZING 2>&1 | grep -v 'prohibited flag' >&2

mkdir -p "$scratch/artifacts"
status=0
for target in "${targets[@]}"; do
  work=$(mktemp -d)
  cp -R "Tests/Fuzz/corpus/$target/." "$work/"
  echo "fuzz: $target for ${seconds}s from $(ls "Tests/Fuzz/corpus/$target" | wc -l) seeds" >&2
  if ! NOTIFY_ROUTE_FUZZ_TARGET=$target "$scratch/debug/notify-route-fuzz" "$work" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$scratch/artifacts/$target-" -print_final_stats=1 > "$scratch/$target.log" 2>&1; then
    echo "fuzz: $target FAILED; the input is in $scratch/artifacts/:" >&2
    grep -E 'ERROR|Fatal error|Test unit written|SUMMARY' "$scratch/$target.log" >&2 || tail -30 "$scratch/$target.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^Done' "$scratch/$target.log" | sed "s/^/fuzz: $target: /" >&2
  fi
  rm -rf "$work"
done
exit $status
