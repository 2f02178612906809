#!/usr/bin/env bash
# hosts_bench.sh BUILD_DIR: start a trivial command on 16 SSH hosts with ferry,
# ansible and pdsh, side by side in one run (docs/DESIGN.md §8: "faster than ansible,
# within 1.5x of pdsh"). Prints figures; not a test. Run as root.
#
# Brings up its own 16-host testbed (tests/testbed/testbed.sh up 16) in a fresh
# state dir and takes it down on exit, whatever happens. Installs nothing: pdsh
# and ansible must be there (scripts/install-deps.sh --bench). Every tool uses
# the same client key and the same known_hosts file, with host keys checked.
#
#   ferry cold   fresh FERRY_HOME and fresh host workdirs: includes the agent upload
#   ferry warm   the agent is already in the workdirs (one unmeasured run first)
#   ansible      ansible all -f 16 -m command -a true (its default ssh settings,
#                a private ControlPath dir per run so no run reuses another's master)
#   pdsh         pdsh -R ssh -f 16 -w ... true
#
# Each is measured REPS times (env HOSTS_BENCH_REPS, default 5), interleaved; the
# median wall time of each is printed, then the ratios.
set -euo pipefail

readonly N_HOSTS=16
readonly REPS=${HOSTS_BENCH_REPS:-5}
readonly SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly TESTBED="$SRC/tests/testbed/testbed.sh"

readonly BENCH=hosts_bench
source "$SRC/tests/bench/bench_start.sh"
bench_build_dir "$@"
bench_needs_agent_and_root "the testbed uses network namespaces"
missing=()
for tool in pdsh ansible python3 ssh; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if (( ${#missing[@]} )); then
  die "missing: ${missing[*]}. Install them with: sudo scripts/install-deps.sh --bench (apt-get install pdsh ansible)"
fi
pdsh -L 2>/dev/null | grep -q '^Module: rcmd/ssh' || die "pdsh has no ssh rcmd module (Debian: package pdsh)"

WORK=$(mktemp -d /tmp/ferry-hosts-bench.XXXXXX)
TB="$WORK/testbed"
cleanup() {
  local rc=$?
  # Ask any ssh ControlMaster ansible left behind to exit (they live in our namespace).
  local sock
  for sock in "$WORK"/ansible-cp-*/*; do
    [[ -S "$sock" ]] && ssh -o ControlPath="$sock" -O exit bench >/dev/null 2>&1 || true
  done
  "$TESTBED" down "$TB" >/dev/null 2>&1 || echo "hosts_bench: testbed down failed; run: $TESTBED down $TB" >&2
  rm -rf -- "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "hosts_bench: bringing up $N_HOSTS hosts in $TB" >&2
"$TESTBED" up "$N_HOSTS" "$TB" >/dev/null
# shellcheck disable=SC1091
source "$TB/hosts.env"
KEY=$TESTBED_IDENTITY
KH=$TESTBED_KNOWN_HOSTS

addresses=()
for (( k = 1; k <= N_HOSTS; k++ )); do v="H${k}_ADDRESS"; addresses+=("${!v}"); done

# --- ferry: one stage per host, all independent, workdirs under ${{ params.base }}.
WF="$WORK/wf.yaml"
{
  echo "name: bench16"
  echo "params:"
  echo "  base: /nonexistent"
  echo "hosts:"
  for (( k = 1; k <= N_HOSTS; k++ )); do
    echo "  h$k: {transport: ssh, address: ${addresses[k-1]}, user: root, identity: $KEY, known_hosts: $KH, ssh_config: none, workdir: \"\${{ params.base }}/h$k\", give_up: 60s}"
  done
  echo "stages:"
  for (( k = 1; k <= N_HOSTS; k++ )); do
    echo "  s$k: {host: h$k, run: 'true'}"
  done
} >"$WF"
FERRY_HOME_WARM="$WORK/ferry-warm/home"
mkdir -p "$FERRY_HOME_WARM"

# --- ansible: INI inventory, host keys checked against the same known_hosts.
INV="$WORK/inventory.ini"
{
  echo "[bench]"
  for (( k = 1; k <= N_HOSTS; k++ )); do
    echo "h$k ansible_host=${addresses[k-1]} ansible_user=root ansible_ssh_private_key_file=$KEY ansible_ssh_common_args='-F none -o UserKnownHostsFile=$KH -o StrictHostKeyChecking=yes -o BatchMode=yes'"
  done
} >"$INV"
: >"$WORK/ansible.cfg"
export ANSIBLE_CONFIG="$WORK/ansible.cfg"   # no /etc/ansible or ./ansible.cfg surprises
export ANSIBLE_HOST_KEY_CHECKING=True
export ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3
export ANSIBLE_LOCAL_TEMP="$WORK/ansible-local"
export ANSIBLE_NOCOLOR=1

# --- pdsh
export PDSH_SSH_ARGS="-F none -i $KEY -o UserKnownHostsFile=$KH -o StrictHostKeyChecking=yes -o BatchMode=yes -l %u %h"
PDSH_HOSTS=$(IFS=,; echo "${addresses[*]}")

now_ns() { date +%s%N; }
# timed NAME CMD...: runs CMD, appends its wall ms to $WORK/NAME.times; CMD must succeed.
timed() {
  local name=$1; shift
  local t0 t1 out
  out="$WORK/$name.last"
  t0=$(now_ns)
  if ! "$@" >"$out" 2>&1; then
    echo "hosts_bench: $name failed:" >&2; tail -20 "$out" >&2; exit 1
  fi
  t1=$(now_ns)
  echo $(( (t1 - t0) / 1000000 )) >>"$WORK/$name.times"
}

ferry_cold() {
  local d="$WORK/ferry-cold-$1"
  mkdir -p "$d/home"
  FERRY_HOME="$d/home" "$FERRY" run "$WF" -p base="$d"
}
ferry_warm() { FERRY_HOME="$FERRY_HOME_WARM" "$FERRY" run "$WF" -p base="$WORK/ferry-warm"; }
ansible_all() {
  local cp="$WORK/ansible-cp-$1"
  mkdir -p "$cp"
  ANSIBLE_SSH_CONTROL_PATH_DIR="$cp" ansible all -i "$INV" -f "$N_HOSTS" -m command -a true
  local sock
  for sock in "$cp"/*; do [[ -S "$sock" ]] && ssh -o ControlPath="$sock" -O exit bench >/dev/null 2>&1 || true; done
}
pdsh_all() { pdsh -S -R ssh -f "$N_HOSTS" -l root -w "$PDSH_HOSTS" true; }

# Warm-up (unmeasured): puts the agent in the warm workdirs, and checks that every
# tool works against these hosts before anything is timed.
echo "hosts_bench: warming up (unmeasured)" >&2
timed warmup ferry_warm
timed warmup ansible_all 0
timed warmup pdsh_all

for (( r = 1; r <= REPS; r++ )); do
  echo "hosts_bench: round $r/$REPS" >&2
  timed ferry_cold ferry_cold "$r"
  timed ferry_warm ferry_warm
  timed ansible ansible_all "$r"
  timed pdsh pdsh_all
done

median() { sort -n "$WORK/$1.times" | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print int((a[NR/2]+a[NR/2+1])/2)}'; }
all() { tr '\n' ' ' <"$WORK/$1.times" | sed 's/ $//'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

cold=$(median ferry_cold); warm=$(median ferry_warm); ans=$(median ansible); pd=$(median pdsh)
agent_bytes=$(stat -c %s "$BUILD/bin/ferry-agent")
echo "start a trivial command on $N_HOSTS SSH hosts (testbed, same key and known_hosts; $REPS rounds, interleaved)"
echo "ferry-agent binary: $agent_bytes bytes; each testbed host has its own HOME, so no login rc of this machine runs"
printf '%-12s %8s   %s\n' "tool" "median" "all runs (ms)"
printf '%-12s %6s ms   %s\n' "ferry cold" "$cold" "$(all ferry_cold)"
printf '%-12s %6s ms   %s\n' "ferry warm" "$warm" "$(all ferry_warm)"
printf '%-12s %6s ms   %s\n' "ansible" "$ans" "$(all ansible)"
printf '%-12s %6s ms   %s\n' "pdsh" "$pd" "$(all pdsh)"
echo "ferry warm / ansible = $(ratio "$warm" "$ans")   (goal < 1)"
echo "ferry warm / pdsh    = $(ratio "$warm" "$pd")   (goal <= 1.5)"
echo "ferry cold / ansible = $(ratio "$cold" "$ans")"
echo "ferry cold / pdsh    = $(ratio "$cold" "$pd")"
