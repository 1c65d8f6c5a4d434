#!/usr/bin/env bash
# Runs a command with every process it starts held to CPUS of CPU time (a CFS quota, 10 ms
# period), to see a benchmark as in this VM's slow phases, which come and go by the hour:
# a quota that brings a reference build's throughput to what it made in a slow phase stands
# in for one. The same quota is not the same phase from one session to the next: run the
# reference build under it in the same minutes, and rotate the builds' order from round to round.
#
#   bash Tests/Benchmarks/cpu-cap.sh CPUS COMMAND...     # e.g. 1.15 bash Tests/Benchmarks/daemon.sh DIR throughput
#
# Needs root and the cpu controller (cgroup v1's /sys/fs/cgroup/cpu, or v2's cpu.max).
set -euo pipefail
CPUS=${1:?usage: cpu-cap.sh CPUS COMMAND...}
shift
[ $# -ge 1 ] || { echo "usage: cpu-cap.sh CPUS COMMAND..." >&2; exit 64; }
quota=$(awk -v c="$CPUS" 'BEGIN { if (c <= 0) exit 1; printf "%d", c * 10000 }') ||
  { echo "cpu-cap.sh: CPUS must be a positive number, not $CPUS" >&2; exit 64; }
if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
  group=/sys/fs/cgroup/cpu/notify-route-cap
  mkdir -p "$group"
  echo 10000 >"$group/cpu.cfs_period_us"
  echo "$quota" >"$group/cpu.cfs_quota_us"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
  group=/sys/fs/cgroup/notify-route-cap
  echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
  mkdir -p "$group"
  echo "$quota 10000" >"$group/cpu.max"
else
  echo "cpu-cap.sh: no cgroup cpu controller here" >&2
  exit 69
fi
echo $$ >"$group/cgroup.procs"
exec "$@"
