#!/bin/bash
# Benchmark: relay a file between two testbed hosts that cannot reach each other,
# through this machine: ferry vs `ssh A cat | ssh B 'cat >'` vs `scp -3`, all with
# the same cipher (the testbed's sshd allows only that one), interleaved, medians.
# Then one large ferry relay for the coordinator's peak RSS.
# Usage (root): tests/bench/relay_bench.sh BUILD_DIR [SIZE_MIB] [ROUNDS] [BIG_MIB]
# Prints figures; not a test.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
size_mib=${2:-1024}
rounds=${3:-3}
big_mib=${4:-4096}
cipher=${FERRY_BENCH_CIPHER:-aes128-gcm@openssh.com}
here=$(cd "$(dirname "$0")" && pwd)
tb="$here/../testbed/testbed.sh"
state=$(mktemp -d /tmp/ferry-relay-bench.XXXXXX)
cleanup() { FERRY_TESTBED_CIPHERS= "$tb" down "$state" >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT

FERRY_TESTBED_CIPHERS="$cipher" "$tb" up 2 "$state" >/dev/null
addr() { python3 -c "import json,sys; h=[x for x in json.load(open('$state/hosts.json'))['hosts'] if x['name']==sys.argv[1]][0]; print(h['address'])" "$1"; }
a=$(addr h1); b=$(addr h2)
id="$state/id_ed25519"; kh="$state/known_hosts"
ssh_opts=(-F none -i "$id" -o UserKnownHostsFile="$kh" -o StrictHostKeyChecking=yes -o BatchMode=yes -c "$cipher")
src="$state/h1/work/big.bin"
echo "relay bench: ${size_mib} MiB h1($a) -> h2($b) through this machine, cipher $cipher, $rounds rounds"
head -c "$((size_mib << 20))" /dev/urandom >"$src"
want=$(sha256sum "$src" | cut -d' ' -f1)

cat >"$state/wf.yaml" <<YAML
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
    route: relay
    streams: ${FERRY_BENCH_STREAMS:-4}
YAML
export FERRY_HOME="$state/home"

check() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$want" ] || { echo "MISMATCH in $1" >&2; exit 1; }; rm -f "$1"; }
now() { date +%s.%N; }
declare -a t_pipe t_scp t_ferry rss_ferry
# Warm-up: puts the agent on both hosts (the cold start is the hosts benchmark's subject).
"$build/bin/ferry" run "$state/wf.yaml" -p dest=warm.bin >/dev/null; check "$state/h2/work/warm.bin"
for r in $(seq 1 "$rounds"); do
  s=$(now); ssh "${ssh_opts[@]}" "root@$a" "cat $src" | ssh "${ssh_opts[@]}" "root@$b" "cat > $state/h2/work/pipe.bin"; e=$(now)
  t_pipe+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/pipe.bin"
  s=$(now); scp -3 -q "${ssh_opts[@]}" "root@$a:$src" "root@$b:$state/h2/work/scp.bin"; e=$(now)
  t_scp+=("$(echo "$e - $s" | bc)"); check "$state/h2/work/scp.bin"
  s=$(now); /usr/bin/time -f "%M" -o "$state/rss" "$build/bin/ferry" run "$state/wf.yaml" -p dest=ferry.bin >/dev/null; e=$(now)
  t_ferry+=("$(echo "$e - $s" | bc)"); rss_ferry+=("$(cat "$state/rss")"); check "$state/h2/work/ferry.bin"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${t_pipe[@]}"); ms=$(median "${t_scp[@]}"); mf=$(median "${t_ferry[@]}")
rate() { echo "scale=1; $size_mib / $1" | bc; }
echo "wall time per ${size_mib} MiB (median of $rounds; whole commands, connection setup included):"
printf '  ssh A cat | ssh B cat>   %7.2f s  %7s MiB/s   runs: %s\n' "$mp" "$(rate "$mp")" "${t_pipe[*]}"
printf '  scp -3                   %7.2f s  %7s MiB/s   runs: %s\n' "$ms" "$(rate "$ms")" "${t_scp[*]}"
printf '  ferry run (copy stage)   %7.2f s  %7s MiB/s   runs: %s\n' "$mf" "$(rate "$mf")" "${t_ferry[*]}"
echo "ratios (throughput): ferry/pipe = $(echo "scale=2; $mp / $mf" | bc)  (goal >= 1.2)   ferry/scp-3 = $(echo "scale=2; $ms / $mf" | bc)  (goal >= 2)"
echo "coordinator peak RSS during the ${size_mib} MiB relays: $(median "${rss_ferry[@]}") KiB (median)"

if [ "$big_mib" -gt 0 ]; then
  head -c "$((big_mib << 20))" /dev/urandom >"$state/h1/work/huge.bin"
  /usr/bin/time -f "%M %e" -o "$state/rss" "$build/bin/ferry" run "$state/wf.yaml" -p src=huge.bin -p dest=huge.bin >/dev/null
  read -r rss secs <"$state/rss"
  cmp -s "$state/h1/work/huge.bin" "$state/h2/work/huge.bin" || { echo "MISMATCH in the ${big_mib} MiB relay" >&2; exit 1; }
  echo "${big_mib} MiB relay: coordinator peak RSS $rss KiB ($((rss / 1024)) MiB; goal <= 64 MiB), ${secs} s"
fi
