#!/usr/bin/env bash
# slurm_bench.sh BUILD_DIR: what ferry asks of slurmctld while one run holds 100
# running Slurm jobs, and how soon it records a job's end (issue 27's goals: at most
# one poll per 5 s per run whatever the job count; job end -> ferry's record within
# 10 s). Prints figures; not a test. Run as root.
#
# Brings up its own one-node Slurm (tests/slurm/slurm_testbed.sh, CPUS=128 so 100
# one-CPU jobs run at once) in a fresh state dir, and takes it down on exit by the
# pids it recorded. Every Slurm client ferry's agent runs goes through a shim that
# logs it with a timestamp. The run's 100 stages each wait for a release file, then
# write the time they end (ms) and exit.
#
#   commands/min   Slurm client calls in WINDOW_S (default 60) s once all 100 run, per minute, by tool
#   end->record    per job: ferry's attempt.finished event minus the job's own end time
#                  (median and max over the 100 jobs)
set -euo pipefail

readonly N_JOBS=${SLURM_BENCH_JOBS:-100}
readonly WINDOW_S=${SLURM_BENCH_WINDOW_S:-60}
readonly SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

readonly BENCH=slurm_bench
source "$SRC/tests/bench/bench_start.sh"
bench_build_dir "$@"
bench_needs_agent_and_root "slurmd, munged"

WORK=$(mktemp -d /tmp/ferry-slurm-bench.XXXXXX)
ferry_pid=""
cleanup() {
  [[ -n "$ferry_pid" ]] && kill "$ferry_pid" 2>/dev/null || true
  "$SRC/tests/slurm/slurm_testbed.sh" down "$WORK/cluster" >/dev/null 2>&1 || true
  rm -rf -- "$WORK"
}
trap cleanup EXIT

CPUS=128 KILL_WAIT=2 SLURMCTLD_PORT=16827 SLURMD_PORT=16828 \
  "$SRC/tests/slurm/slurm_testbed.sh" up "$WORK/cluster" || die "the one-node Slurm did not start"
export SLURM_CONF="$WORK/cluster/slurm.conf"
mkdir -p "$WORK/shims"
for tool in sbatch squeue scontrol scancel sinfo sacct; do
  printf '#!/bin/sh\necho "$(date +%%s%%3N) %s $*" >> %s\nexec /usr/bin/%s "$@"\n' \
    "$tool" "$WORK/calls.log" "$tool" > "$WORK/shims/$tool"
  chmod 0755 "$WORK/shims/$tool"
done

release="$WORK/release"
{
  echo "name: many"
  echo "hosts:"
  echo "  cluster: {scheduler: slurm, slurm: {cpus: 1}}"
  echo "stages:"
  for ((i = 1; i <= N_JOBS; i++)); do
    echo "  j$i:"
    echo "    run: while [ ! -f $release ]; do sleep 0.2; done; date +%s%3N > $WORK/end-j$i"
  done
} > "$WORK/wf.yaml"

export FERRY_HOME="$WORK/home" NO_COLOR=1
PATH="$WORK/shims:$PATH" "$FERRY" run "$WORK/wf.yaml" > "$WORK/run.log" 2>&1 &
ferry_pid=$!

running() { squeue -h -t RUNNING -o %i 2>/dev/null | wc -l; }
for ((i = 0; i < 600; i++)); do
  (( $(running) >= N_JOBS )) && break
  kill -0 "$ferry_pid" 2>/dev/null || { cat "$WORK/run.log"; die "ferry ended before its jobs ran"; }
  sleep 0.5
done
(( $(running) >= N_JOBS )) || die "only $(running) of $N_JOBS jobs running after 300 s"

from=$(date +%s%3N)
sleep "$WINDOW_S"
to=$(date +%s%3N)
echo "slurm_bench: $N_JOBS running Slurm jobs of one run, ${WINDOW_S} s window"
awk -v a="$from" -v b="$to" '$1 >= a && $1 < b { n[$2]++; t++ } END {
  printf "  Slurm commands/min: %.1f (", t * 60000 / (b - a)
  sep = ""; for (k in n) { printf "%s%s %.1f", sep, k, n[k] * 60000 / (b - a); sep = ", " }
  print ")" }' "$WORK/calls.log"

touch "$release"
wait "$ferry_pid" || true
ferry_pid=""
sqlite3 -cmd ".timeout 10000" "$FERRY_HOME/ferry.db" \
  "SELECT stage, ts_ms FROM events WHERE run_id='many-1' AND type='attempt.finished'" | tr '|' ' ' > "$WORK/recorded"
while read -r stage ts; do
  [[ -f "$WORK/end-$stage" ]] && echo $(( ts - $(cat "$WORK/end-$stage") ))
done < "$WORK/recorded" | sort -n > "$WORK/lat"
n=$(wc -l < "$WORK/lat")
(( n > 0 )) || die "no job end was recorded"
awk -v n="$n" '{ v[NR] = $1 } END {
  printf "  job end -> ferry record: median %.1f s, max %.1f s (%d jobs)\n", v[int((n + 1) / 2)] / 1000, v[n] / 1000, n }' "$WORK/lat"
