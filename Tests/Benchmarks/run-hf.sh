# To be sourced inside a benchmark session (bench-session.sh): `run_hf NAME OPTIONS... COMMANDS...`
# runs one hyperfine comparison in ROUNDS rounds and writes $WORK/hf-NAME.json, each
# command's times pooled over the rounds. Needs WORK and ROUNDS.
run_hf() {  # name, options..., commands...
  local name=$1; shift
  local rounds=$ROUNDS
  case $name in *apprise) rounds=1 ;; esac  # 400 ms a run: one round
  for round in $(seq "$rounds"); do
    hyperfine -N --style none --export-json "$WORK/hf-$name-$round.json" "$@" >"$WORK/hf-$name.log" 2>&1 ||
      { echo "hyperfine $name failed:"; cat "$WORK/hf-$name.log"; return 0; }
  done
  # One result per command, its times pooled over the rounds.
  /usr/bin/python3 - "$WORK" "$name" "$rounds" <<'PY'
import json, statistics, sys
work, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
parts = [json.load(open(f"{work}/hf-{name}-{r}.json"))["results"] for r in range(1, rounds + 1)]
merged = []
for index, first in enumerate(parts[0]):
    times = [t for part in parts for t in part[index]["times"]]
    merged.append({"command": first["command"], "times": times, "median": statistics.median(times),
                   "mean": statistics.mean(times), "stddev": statistics.stdev(times) if len(times) > 1 else 0.0})
json.dump({"results": merged}, open(f"{work}/hf-{name}.json", "w"))
PY
}
