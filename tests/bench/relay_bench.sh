#!/bin/bash
# Benchmark: relay a file between two testbed hosts that cannot reach each other,
# through this machine: ferry vs `ssh A cat | ssh B 'cat >'` vs `scp -3`, interleaved,
# medians, in two settings (FERRY_BENCH_SETTINGS, default "real bare"):
#   real  hosts as users have them: sshd with its default ciphers (every client keeps
#         its own preference) and a login rc (~/.bashrc) doing a fixed amount of work
#         that takes FERRY_BENCH_RC_S seconds on an idle core (default 0.4, like a
#         pyenv/conda init) on every exec;
#   bare  no rc, and the sshd allows only FERRY_BENCH_CIPHER (default aes128-gcm).
# In the first setting also: the direct route (h1 and h2 linked; `ferry-agent push`
# run by ferry) against one `ssh B 'cat >'` hop from h1, and one BIG_MIB relay for
# the coordinator's peak RSS.
# FERRY_BENCH_BASELINE=DIR (a directory holding bin/ferry and bin/ferry-agent of
# another build, e.g. main's) adds that build's relay to every round, interleaved.
# Besides wall times it prints the CPU each relay costs (user+sys, medians): on the
# coordinator side (ferry, or the pipe's two ssh clients) and on the hosts (sshd and
# its sessions, agents, cat): on a machine whose cores are all busy, the wall-time
# ratio depends on these (and on how long each hop waits for a core).
# Usage (root): tests/bench/relay_bench.sh BUILD_DIR [SIZE_MIB] [ROUNDS] [BIG_MIB]
# Prints figures; not a test.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
baseline=${FERRY_BENCH_BASELINE:+$(cd "$FERRY_BENCH_BASELINE" && pwd)}
size_mib=${2:-1024}
rounds=${3:-3}
big_mib=${4:-4096}
settings=${FERRY_BENCH_SETTINGS:-real bare}
bare_cipher=${FERRY_BENCH_CIPHER:-aes128-gcm@openssh.com}
rc_s=${FERRY_BENCH_RC_S:-0.4}
here=$(cd "$(dirname "$0")" && pwd)
tb="$here/../testbed/testbed.sh"
state=$(mktemp -d /tmp/ferry-relay-bench.XXXXXX)
cleanup() { "$tb" down "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
now() { date +%s.%N; }
rate() { echo "scale=1; $size_mib / $1" | bc; }
ratio() { echo "scale=2; $1 / $2" | bc; }
min2() { if (( $(echo "$1 < $2" | bc) )); then echo "$1"; else echo "$2"; fi; }
summary=()
med2() { printf '%.2f' "$(median "$@")"; }  # a median with two decimals
cpu_of() { awk '{printf "%.2f", $1 + $2}' "$1"; }  # a `time -f "%U %S"` file
# CPU seconds used inside the hosts' namespaces so far: every process there, with its
# reaped children (sshd's sessions and what they ran).
hosts_cpu() {
  local t=0 p ns
  for ns in "$H1_NETNS" "$H2_NETNS"; do
    for p in $(ip netns pids "$ns"); do t=$((t + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  done
  echo "scale=2; $t / $(getconf CLK_TCK)" | bc
}
# Runs a command, then appends the hosts' CPU it cost to the array named $1
# (after a second, so the sessions it ended are reaped).
hosts_cpu_of() {
  local -n into=$1; shift
  local c0; c0=$(hosts_cpu); "$@"; local rc=$?; sleep 1
  into+=("$(echo "$(hosts_cpu) - $c0" | bc)"); return $rc
}
# Loop turns of bash costing rc_s seconds on one core (best of 3 probes).
calibrate_rc() {
  local best=999 t i
  for i in 1 2 3; do
    t=$( { TIMEFORMAT=%R; time bash -c 'for (( i = 0; i < 200000; i++ )); do :; done'; } 2>&1 )
    if (( $(echo "$t < $best" | bc) )); then best=$t; fi
  done
  echo "200000 * $rc_s / $best / 1" | bc
}
rc_loops=$(calibrate_rc)

for setting in $settings; do
  case "$setting" in
    real) sshd_ciphers=""; cipher_opt=(); rc=$rc_s ;;
    bare) sshd_ciphers=$bare_cipher; cipher_opt=(-c "$bare_cipher"); rc=0 ;;
    *) echo "unknown setting '$setting' (real | bare)" >&2; exit 2 ;;
  esac
  FERRY_TESTBED_CIPHERS="$sshd_ciphers" "$tb" up 2 "$state" >/dev/null
  # shellcheck disable=SC1091
  source "$state/hosts.env"
  a=$H1_ADDRESS; b=$H2_ADDRESS
  if [ "$rc" != 0 ]; then
    # A fixed amount of shell work, like a pyenv/conda init: rc_s seconds on an idle
    # core (calibrated here), longer when logins compete for the CPU.
    for h in h1 h2; do
      echo "for (( __i = 0; __i < $rc_loops; __i++ )); do :; done; unset __i" >"$state/$h/home/.bashrc"
    done
  fi
  id="$state/id_ed25519"; kh="$state/known_hosts"
  ssh_opts=(-F none -i "$id" -o UserKnownHostsFile="$kh" -o StrictHostKeyChecking=yes -o BatchMode=yes "${cipher_opt[@]}")
  src="$state/h1/work/big.bin"
  echo "== setting $setting: ${size_mib} MiB h1($a) -> h2($b) through this machine, sshd ciphers: ${sshd_ciphers:-default}, login rc ${rc} s (${rc_loops} bash loop turns), $rounds rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  head -c "$((size_mib << 20))" /dev/urandom >"$src"
  want=$(sha256sum "$src" | cut -d' ' -f1)
  check() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$want" ] || { echo "MISMATCH in $1" >&2; exit 1; }; rm -f "$1"; }
  workflow() {  # ROUTE FILE
  cat >"$2" <<YAML
name: relaybench
params:
  dest: ferry.bin
  src: big.bin
hosts:
  h1: {transport: ssh, address: $a, user: root, identity: $id, known_hosts: $kh, ssh_config: none, workdir: $state/h1/work}
  h2: {transport: ssh, address: $b, user: root, identity: $id, known_hosts: $kh, ssh_config: none, workdir: $state/h2/work}
stages:
  relay:
    kind: copy
    from: h1:\${{ params.src }}
    to: h2:\${{ params.dest }}
    route: $1
    streams: ${FERRY_BENCH_STREAMS:-4}
YAML
  }
  workflow relay "$state/wf.yaml"; workflow direct "$state/wfd.yaml"
  export FERRY_HOME="$state/home"
  rm -rf "$FERRY_HOME"
  t_pipe=(); t_scp=(); t_ferry=(); rss_ferry=(); t_base=()
  cpu_pipe=(); cpu_ferry=(); cpu_base=(); hcpu_pipe=(); hcpu_ferry=(); hcpu_base=()
  # Warm-up: puts the agent on both hosts (the cold start is the hosts benchmark's subject).
  "$build/bin/ferry" run "$state/wf.yaml" -p dest=warm.bin >/dev/null; check "$state/h2/work/warm.bin"
  if [ -n "$baseline" ]; then
    FERRY_HOME="$state/home-base" "$baseline/bin/ferry" run "$state/wf.yaml" -p dest=warm.bin >/dev/null; check "$state/h2/work/warm.bin"
  fi
  for r in $(seq 1 "$rounds"); do
    pipe() {
      s=$(now)
      /usr/bin/time -f "%U %S" -o "$state/cpu_a" ssh "${ssh_opts[@]}" "root@$a" "cat $src" |
        /usr/bin/time -f "%U %S" -o "$state/cpu_b" ssh "${ssh_opts[@]}" "root@$b" "cat > $state/h2/work/pipe.bin"
      e=$(now)
    }
    hosts_cpu_of hcpu_pipe pipe
    t_pipe+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/pipe.bin"
    cpu_pipe+=("$(echo "$(cpu_of "$state/cpu_a") + $(cpu_of "$state/cpu_b")" | bc)")
    s=$(now); scp -3 -q "${ssh_opts[@]}" "root@$a:$src" "root@$b:$state/h2/work/scp.bin"; e=$(now)
    t_scp+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/scp.bin"
    relay() { s=$(now); /usr/bin/time -f "%U %S %M" -o "$state/rss" "$build/bin/ferry" run "$state/wf.yaml" -p dest=ferry.bin >/dev/null; e=$(now); }
    hosts_cpu_of hcpu_ferry relay
    t_ferry+=("$(echo "$e - $s" | bc)"); rss_ferry+=("$(awk '{print $3}' "$state/rss")"); check "$state/h2/work/ferry.bin"
    cpu_ferry+=("$(cpu_of "$state/rss")")
    if [ -n "$baseline" ]; then
      base_relay() { s=$(now); FERRY_HOME="$state/home-base" /usr/bin/time -f "%U %S" -o "$state/cpu_base" "$baseline/bin/ferry" run "$state/wf.yaml" -p dest=base.bin >/dev/null; e=$(now); }
      hosts_cpu_of hcpu_base base_relay
      t_base+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/base.bin"
      cpu_base+=("$(cpu_of "$state/cpu_base")")
    fi
  done
  mp=$(median "${t_pipe[@]}"); ms=$(median "${t_scp[@]}"); mf=$(median "${t_ferry[@]}")
  best=$(min2 "$mp" "$ms")
  echo "wall time per ${size_mib} MiB (median of $rounds; whole commands, logins included):"
  printf '  ssh A cat | ssh B cat>   %7.2f s  %7s MiB/s   runs: %s\n' "$mp" "$(rate "$mp")" "${t_pipe[*]}"
  printf '  scp -3                   %7.2f s  %7s MiB/s   runs: %s\n' "$ms" "$(rate "$ms")" "${t_scp[*]}"
  printf '  ferry run (relay)        %7.2f s  %7s MiB/s   runs: %s\n' "$mf" "$(rate "$mf")" "${t_ferry[*]}"
  line="$setting: relay / faster of pipe and scp -3 = $(ratio "$best" "$mf")  (ferry/pipe $(ratio "$mp" "$mf"), ferry/scp-3 $(ratio "$ms" "$mf")); coordinator peak RSS $(median "${rss_ferry[@]}") KiB"
  echo "$line"; summary+=("$line")
  line="$setting: CPU s per ${size_mib} MiB (user+sys, median): coordinator side: ferry $(med2 "${cpu_ferry[@]}"), the pipe's two ssh clients $(med2 "${cpu_pipe[@]}"); hosts (sshd, agents, cat): ferry $(med2 "${hcpu_ferry[@]}"), pipe $(med2 "${hcpu_pipe[@]}")"
  echo "$line"; summary+=("$line")
  if [ -n "$baseline" ]; then
    mb=$(median "${t_base[@]}")
    printf '  baseline ferry (relay)   %7.2f s  %7s MiB/s   runs: %s\n' "$mb" "$(rate "$mb")" "${t_base[*]}"
    line="$setting: baseline relay / faster of pipe and scp -3 = $(ratio "$best" "$mb"); CPU s: coordinator $(med2 "${cpu_base[@]}"), hosts $(med2 "${hcpu_base[@]}")"
    echo "$line"; summary+=("$line")
  fi

  if [ "$setting" = "$(echo "$settings" | awk '{print $1}')" ]; then
    # Direct route: h1 reaches h2; ferry's push (a detached `ferry-agent push` on h1)
    # against one hop of the OpenSSH client from h1 (h1's own ssh config and key).
    "$tb" link h1 h2 "$state" >/dev/null
    # OpenSSH finds ~/.ssh through the password database: name h1's config.
    hop() { ip netns exec "$H1_NETNS" ssh -F "$state/h1/home/.ssh/config" "${cipher_opt[@]}" "$b" "cat > $state/h2/work/hop.bin" <"$src"; }
    "$build/bin/ferry" run "$state/wfd.yaml" -p dest=warmd.bin >/dev/null; check "$state/h2/work/warmd.bin"
    t_hop=(); t_push=(); t_pbase=()
    if [ -n "$baseline" ]; then
      FERRY_HOME="$state/home-base" "$baseline/bin/ferry" run "$state/wfd.yaml" -p dest=warmd.bin >/dev/null; check "$state/h2/work/warmd.bin"
    fi
    for r in $(seq 1 "$rounds"); do
      s=$(now); hop; e=$(now); t_hop+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/hop.bin"
      s=$(now); "$build/bin/ferry" run "$state/wfd.yaml" -p dest=push.bin >/dev/null; e=$(now)
      t_push+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/push.bin"
      if [ -n "$baseline" ]; then
        s=$(now); FERRY_HOME="$state/home-base" "$baseline/bin/ferry" run "$state/wfd.yaml" -p dest=pbase.bin >/dev/null; e=$(now)
        t_pbase+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/pbase.bin"
      fi
    done
    mh=$(median "${t_hop[@]}"); mpu=$(median "${t_push[@]}")
    printf '  h1: ssh B cat> (one hop) %7.2f s  %7s MiB/s   runs: %s\n' "$mh" "$(rate "$mh")" "${t_hop[*]}"
    printf '  ferry run (direct push)  %7.2f s  %7s MiB/s   runs: %s\n' "$mpu" "$(rate "$mpu")" "${t_push[*]}"
    line="$setting: direct push / one ssh hop = $(ratio "$mh" "$mpu")"
    echo "$line"; summary+=("$line")
    if [ -n "$baseline" ]; then
      mpb=$(median "${t_pbase[@]}")
      printf '  baseline (direct push)   %7.2f s  %7s MiB/s   runs: %s\n' "$mpb" "$(rate "$mpb")" "${t_pbase[*]}"
      line="$setting: baseline direct push / one ssh hop = $(ratio "$mh" "$mpb")"
      echo "$line"; summary+=("$line")
    fi
    "$tb" unlink h1 h2 "$state" >/dev/null

    if [ "$big_mib" -gt 0 ]; then
      head -c "$((big_mib << 20))" /dev/urandom >"$state/h1/work/huge.bin"
      /usr/bin/time -f "%M %e" -o "$state/rss" "$build/bin/ferry" run "$state/wf.yaml" -p src=huge.bin -p dest=huge.bin >/dev/null
      read -r rss secs <"$state/rss"
      cmp -s "$state/h1/work/huge.bin" "$state/h2/work/huge.bin" || { echo "MISMATCH in the ${big_mib} MiB relay" >&2; exit 1; }
      line="$setting: ${big_mib} MiB relay: coordinator peak RSS $rss KiB ($((rss / 1024)) MiB; goal <= 64 MiB), ${secs} s"
      echo "$line"; summary+=("$line")
      rm -f "$state/h1/work/huge.bin" "$state/h2/work/huge.bin"
    fi
  fi
  "$tb" down "$state" >/dev/null
done
echo "== summary (goals: real >= 1.2, bare >= 1.4, direct push >= 0.9, RSS <= 64 MiB); load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${summary[@]}"
