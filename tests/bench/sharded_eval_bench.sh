#!/usr/bin/env bash
# sharded_eval_bench.sh BUILD_DIR: the wall time of one 64-prompt eval (issue 31) run
# whole on one host and split over three (`hosts: [a, b, c]`), through `ferry run`,
# plus each shard alone — what a shard takes on a host with this machine's cores to
# itself. Prints figures; not a test. Needs no root: the hosts are local hosts with
# workdirs of their own, so here all three share this machine's cores.
#
#   1 host      `ferry run`: one eval stage on host `one`, threads T (all cores)
#   3 hosts     `ferry run`: the same eval with hosts: [a, b, c], threads T/3 each
#               (at least 1), the three shards at once on these cores
#   alone       `ferry-eval --threads T` alone: the eval without ferry around it
#   shard K     `ferry-eval --shard K/3 --threads T` alone: the time the shard would
#               take on a host of its own with T cores; the slowest, against `alone`,
#               is what 3 such hosts gain (ferry's own cost and the merge, a few ms,
#               are in the 1-host and 3-host rows)
#
# The model is a random Qwen3-shaped target (8 layers, hidden 512; 104 MiB F32) with a
# random 1-layer drafter, made with ferry-tiny-models, so decoding dominates. Each
# row is measured REPS times (env SHARD_BENCH_REPS, default 3), interleaved; medians
# and the ratios are printed.
set -euo pipefail

readonly REPS=${SHARD_BENCH_REPS:-3}
readonly PROMPTS=64
readonly TOKENS=${SHARD_BENCH_TOKENS:-24}

die() { echo "sharded_eval_bench: $*" >&2; exit 1; }
(( $# == 1 )) || die "usage: sharded_eval_bench.sh BUILD_DIR"
BUILD=$(realpath -- "$1")
B="$BUILD/bin"
[[ -x "$B/ferry" && -x "$B/ferry-eval" && -x "$B/ferry-tiny-models" ]] || die "no ferry, ferry-eval or ferry-tiny-models in $B: build with FERRY_WITH_TORCH=ON"
THREADS=$(nproc)
SHARD_THREADS=$(( THREADS / 3 > 0 ? THREADS / 3 : 1 ))

WORK=$(mktemp -d /tmp/ferry-shard-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
"$B/ferry-tiny-models" target --out tgt --kind random --vocab 2048 --hidden 512 --intermediate 1536 --layers 8 \
  --heads 8 --kv-heads 4 --head-dim 64 >/dev/null
"$B/ferry-tiny-models" drafter --out drf --kind random --target-vocab 2048 --hidden 512 --intermediate 1536 \
  --layers 1 --heads 8 --kv-heads 4 --head-dim 64 --block-size 8 --num-target-layers 8 --target-layer-ids 1,4,7 >/dev/null
"$B/ferry-tiny-models" prompts --out prompts.jsonl --count $PROMPTS --vocab 2048 --min-len 16 --max-len 64 --seed 3 >/dev/null

fields="    target: $WORK/tgt
    drafter: $WORK/drf
    prompts: $WORK/prompts.jsonl
    max_new_tokens: $TOKENS"
cat > one.yaml <<EOF
name: one
hosts:
  one: {workdir: $WORK/one}
stages:
  score:
    kind: eval
    host: one
    threads: $THREADS
$fields
EOF
cat > three.yaml <<EOF
name: three
hosts:
  a: {workdir: $WORK/a}
  b: {workdir: $WORK/b}
  c: {workdir: $WORK/c}
stages:
  score:
    kind: eval
    hosts: [a, b, c]
    threads: $SHARD_THREADS
$fields
EOF

export FERRY_HOME="$WORK/home" NO_COLOR=1
seconds_of() {  # runs "$@", prints its wall seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; die "failed: $*"; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
median() { sort -g | awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.1f", m}'; }

# One unmeasured run of each: the worker goes into each workdir once, as in steady use.
"$B/ferry" run one.yaml >/dev/null 2>&1 || die "the 1-host run failed (see $FERRY_HOME)"
"$B/ferry" run three.yaml >/dev/null 2>&1 || die "the 3-host run failed"

declare -a one three whole s1 s2 s3
for ((i = 1; i <= REPS; ++i)); do
  one+=("$(seconds_of "$B/ferry" run one.yaml)")
  three+=("$(seconds_of "$B/ferry" run three.yaml)")
  whole+=("$(seconds_of "$B/ferry-eval" --target tgt --drafter drf --prompts prompts.jsonl --max-new-tokens $TOKENS \
               --threads "$THREADS")")
  for k in 1 2 3; do
    t=$(seconds_of "$B/ferry-eval" --target tgt --drafter drf --prompts prompts.jsonl --max-new-tokens $TOKENS \
          --threads "$THREADS" --shard "$k/3")
    eval "s$k+=(\"$t\")"
  done
  echo "rep $i: 1 host ${one[-1]} s, 3 hosts ${three[-1]} s, whole alone ${whole[-1]} s," \
       "shards alone ${s1[-1]} ${s2[-1]} ${s3[-1]} s"
done

m_one=$(printf '%s\n' "${one[@]}" | median)
m_three=$(printf '%s\n' "${three[@]}" | median)
m_whole=$(printf '%s\n' "${whole[@]}" | median)
m1=$(printf '%s\n' "${s1[@]}" | median); m2=$(printf '%s\n' "${s2[@]}" | median); m3=$(printf '%s\n' "${s3[@]}" | median)
slowest=$(printf '%s\n' "$m1" "$m2" "$m3" | sort -g | tail -1)
echo
echo "$PROMPTS prompts, $TOKENS new tokens, $(nproc) cores here; medians of $REPS (seconds, wall):"
printf '  1 host (threads %s)                        %6s\n' "$THREADS" "$m_one"
printf '  3 hosts sharing these cores (threads %s)   %6s   (%.2fx the 1-host time)\n' "$SHARD_THREADS" "$m_three" \
  "$(awk -v a="$m_three" -v b="$m_one" 'BEGIN { print a / b }')"
printf '  the eval alone, ferry-eval (threads %s)    %6s\n' "$THREADS" "$m_whole"
printf '  each shard alone (threads %s)              %6s %6s %6s\n' "$THREADS" "$m1" "$m2" "$m3"
printf '  3 hosts with their own cores: slowest shard %4s   (%.2fx faster than the eval alone)\n' "$slowest" \
  "$(awk -v a="$m_whole" -v b="$slowest" 'BEGIN { print a / b }')"
echo "  (the merged report equals the 1-host one but for times: tests/eval/stage/sharded_eval_test.cc)"
