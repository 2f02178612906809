#!/usr/bin/env bash
# slurm_testbed.sh: a one-node Slurm cluster for tests, as root, without systemd.
# Needs Debian 12's slurmctld, slurmd, slurm-client and munge (scripts/install-deps.sh --test).
#
#   slurm_testbed.sh up STATE_DIR     start munged + slurmctld + slurmd; all state, keys,
#                                     sockets, logs and pid files live under STATE_DIR
#   slurm_testbed.sh down STATE_DIR   stop exactly those daemons, by the pids they recorded
#   slurm_testbed.sh env STATE_DIR    print `export SLURM_CONF=...` for a shell
#
# `up` exits 0 once `sinfo` reports the node idle, 2 when Slurm is not installed or
# we are not root (callers skip), 1 when a daemon did not come up (see STATE_DIR/log).
# Nothing outside STATE_DIR is touched: own munge key and socket, own slurm.conf
# (SlurmUser=root, proctrack/pgid: no cgroups needed), non-default ports
# (SLURMCTLD_PORT, default 16817; SLURMD_PORT, default 16818). Knobs for tests:
# MIN_JOB_AGE (s a finished job stays in squeue, default 300), KILL_WAIT (s between
# TERM and KILL at a time limit or cancel, default 30), CPUS (default: nproc; more than
# the machine has makes slurmd take the configured count: benchmarks of many jobs),
# FAKE_GPUS (default 2). The node offers 90% of the machine's memory (RealMemory).
set -euo pipefail

readonly UP_TIMEOUT_DS=300    # tenths of a second to wait for the node to be idle
readonly DOWN_TIMEOUT_DS=50   # tenths of a second between TERM and KILL

die() { echo "slurm_testbed: $*" >&2; exit "${2:-1}"; }

cmd=${1:-}
D=$(realpath -m "${2:?usage: slurm_testbed.sh up|down|env STATE_DIR}")

down() {
  local pids=() f p i
  for f in "$D/slurmd.pid" "$D/slurmctld.pid" "$D/munge/munged.pid"; do
    [ -s "$f" ] || continue
    p=$(cat "$f")
    [[ "$p" =~ ^[0-9]+$ ]] && [ "$p" -gt 1 ] || continue
    kill -TERM "$p" 2>/dev/null && pids+=("$p")
  done
  for p in "${pids[@]+"${pids[@]}"}"; do
    for ((i = 0; i < DOWN_TIMEOUT_DS; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  rm -f "$D/slurmd.pid" "$D/slurmctld.pid" "$D/munge/munged.pid"
  return 0
}

case "$cmd" in
  env) echo "export SLURM_CONF=$D/slurm.conf"; exit 0 ;;
  down) down; exit 0 ;;
  up) ;;
  *) die "usage: slurm_testbed.sh up|down|env STATE_DIR" ;;
esac

[ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as any user; mknod for the fake GPUs)" 2
for b in munged slurmctld slurmd sinfo sbatch; do
  command -v "$b" >/dev/null || die "'$b' is not installed (apt-get install slurmctld slurmd slurm-client munge)" 2
done

down  # a testbed left behind by a killed run
H=$(hostname -s)
G=${FAKE_GPUS:-2}
C=${CPUS:-$(nproc)}
MEM_MB=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
overrides=""
[ "$C" -gt "$(nproc)" ] && overrides="SlurmdParameters=config_overrides"
mkdir -p "$D"/{munge,state,spool,log}
chmod 0700 "$D/munge"
if [ ! -f "$D/munge/munge.key" ]; then
  dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$D/munge/munge.key"
fi
# Fake GPUs: character devices with /dev/null's numbers, so Slurm hands out CUDA_VISIBLE_DEVICES.
for ((i = 0; i < G; i++)); do [ -e "$D/fakegpu$i" ] || mknod "$D/fakegpu$i" c 1 3; done
echo "Name=gpu File=$D/fakegpu[0-$((G - 1))]" > "$D/gres.conf"
cat > "$D/slurm.conf" <<CONF
ClusterName=ferrytest
SlurmctldHost=$H
SlurmctldPort=${SLURMCTLD_PORT:-16817}
SlurmdPort=${SLURMD_PORT:-16818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=${MIN_JOB_AGE:-300}
SlurmdTimeout=300
KillWait=${KILL_WAIT:-30}
MpiDefault=none
GresTypes=gpu
$overrides
NodeName=$H CPUs=$C RealMemory=$MEM_MB Gres=gpu:$G State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=$H MaxTime=60 State=UP
CONF
export SLURM_CONF="$D/slurm.conf"
# The daemons' stdio goes to files, and no other descriptor of our caller's goes
# with them: a pipe the daemons kept open would make a caller that waits for our
# output's end wait for the daemons' end. (255 is bash's own hold on this script.)
for fd in $(ls /proc/$$/fd); do
  if [ "$fd" -gt 2 ] && [ "$fd" != 255 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
done
munged --force -S "$D/munge/munge.socket" --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/seed" \
  </dev/null >>"$D/log/daemons.out" 2>&1 || { down; die "munged did not start; see $D/log/munged.log"; }
slurmctld -f "$SLURM_CONF" </dev/null >>"$D/log/daemons.out" 2>&1 ||
  { down; die "slurmctld did not start; see $D/log/slurmctld.log and daemons.out"; }
slurmd -f "$SLURM_CONF" </dev/null >>"$D/log/daemons.out" 2>&1 ||
  { down; die "slurmd did not start; see $D/log/slurmd.log and daemons.out"; }
for ((i = 0; i < UP_TIMEOUT_DS; i++)); do
  sinfo -h -o '%T' 2>/dev/null | grep -qx idle && exit 0
  sleep 0.1
done
down
die "the node did not become idle within $((UP_TIMEOUT_DS / 10))s; see $D/log"
