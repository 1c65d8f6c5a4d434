"""Summarises hyperfine runs made in rounds (hf-1.json ... hf-N.json in one folder): per
command, the median over all rounds' times, the mean CPU, and each round's median.

    python3 hf-rounds.py ROUNDS FOLDER [WIDTH]
"""
import json, statistics, sys

rounds, work = int(sys.argv[1]), sys.argv[2]
width = int(sys.argv[3]) if len(sys.argv) > 3 else 40
parts = [json.load(open(f"{work}/hf-{r}.json"))["results"] for r in range(1, rounds + 1)]
for i, first in enumerate(parts[0]):
    times = [t for p in parts for t in p[i]["times"]]
    cpu = statistics.mean(p[i]["user"] + p[i]["system"] for p in parts) * 1000
    medians = " / ".join(f"{statistics.median(p[i]['times']) * 1000:.2f}" for p in parts)
    print(f"{first['command']:{width}s} median {statistics.median(times) * 1000:6.2f} ms  CPU {cpu:5.2f} ms  rounds: {medians}")
