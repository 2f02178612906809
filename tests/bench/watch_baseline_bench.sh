#!/usr/bin/env bash
# watch_baseline_bench.sh BUILD_DIR: the wall time of one checkpoint's eval in a watch
# with a reference drafter (issue 43), before and after the baseline and the reference
# were decoded once per watch. Prints figures; not a test.
#
#   before   `ferry-eval worker` with the spec a watch gave each checkpoint until
#            then: it decodes the candidate, the reference and the plain baseline
#   after    the same with baseline_store (what a watch gives it now): checkpoint 1
#            decodes all three and stores the reference and baseline, checkpoints
#            2..N decode the candidate only and reuse them
#
# Each is the worker process a watch runs on the eval's host (libtorch start, loading,
# the content hashes of the key, decoding, the report), timed from outside. The model
# is an oracle Qwen3-shaped target (8 layers, hidden 512, vocab 256; period 3, so the
# agree drafter is accepted about as often as a trained one), the candidate its agree
# drafter (block 16), the reference an agree drafter of block 8. A round evaluates
# CHECKPOINTS checkpoints both ways, interleaved, with a fresh store; ROUNDS rounds
# (env WATCH_BENCH_ROUNDS, default 3); medians are printed.
set -euo pipefail

readonly ROUNDS=${WATCH_BENCH_ROUNDS:-3}
readonly CHECKPOINTS=${WATCH_BENCH_CHECKPOINTS:-4}
readonly PROMPTS=${WATCH_BENCH_PROMPTS:-16}
readonly TOKENS=${WATCH_BENCH_TOKENS:-64}

die() { echo "watch_baseline_bench: $*" >&2; exit 1; }
(( $# == 1 )) || die "usage: watch_baseline_bench.sh BUILD_DIR"
BUILD=$(realpath -- "$1")
B="$BUILD/bin"
[[ -x "$B/ferry-eval" && -x "$B/ferry-tiny-models" ]] || die "no ferry-eval or ferry-tiny-models in $B: build with FERRY_WITH_TORCH=ON"
THREADS=${WATCH_BENCH_THREADS:-$(nproc)}

WORK=$(mktemp -d /tmp/ferry-watch-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
shape=(--hidden 512 --intermediate 1536 --heads 8 --kv-heads 4 --head-dim 64)
"$B/ferry-tiny-models" target --out tgt --kind oracle --vocab 256 --layers 8 --oracle-period 3 "${shape[@]}" >/dev/null
for k in $(seq 1 "$CHECKPOINTS"); do
  "$B/ferry-tiny-models" drafter --out "ck-$k" --kind agree --target-vocab 256 --layers 1 --block-size 16 \
    --num-target-layers 8 --target-layer-ids 1,4,6 "${shape[@]}" >/dev/null
  echo "$k" > "ck-$k/step.txt"  # each checkpoint's folder its own, as a trainer's are
done
"$B/ferry-tiny-models" drafter --out ref --kind agree --target-vocab 256 --layers 1 --block-size 8 \
  --num-target-layers 8 --target-layer-ids 1,4,6 "${shape[@]}" >/dev/null
"$B/ferry-tiny-models" prompts --out prompts.jsonl --count "$PROMPTS" --vocab 256 --min-len 16 --max-len 64 --seed 3 >/dev/null

# eval DRAFTER [STORE]: one checkpoint's worker; prints its wall seconds.
eval_seconds() {
  local spec t0 t1
  spec=$(printf '{"target":"%s","drafter":"%s","reference":"%s","prompts":"%s","max_new_tokens":%d,"threads":%d,"gate_deferred":"judged on the last checkpoint","result":"%s"%s}' \
    "$WORK/tgt" "$WORK/$1" "$WORK/ref" "$WORK/prompts.jsonl" "$TOKENS" "$THREADS" "$WORK/result.json" \
    "${2:+,\"baseline_store\":\"$2\"}")
  t0=$(date +%s.%N)
  FERRY_EVAL_SPEC="$spec" "$B/ferry-eval" worker >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; die "failed: $1"; }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: > before.txt; : > first.txt; : > later.txt
for round in $(seq 1 "$ROUNDS"); do
  for k in $(seq 1 "$CHECKPOINTS"); do
    b=$(eval_seconds "ck-$k")
    a=$(eval_seconds "ck-$k" "$WORK/store-$round")
    grep -q "reference and baseline: $([[ $k == 1 ]] && echo decoded || echo reused)" "$WORK/last.log" ||
      die "round $round checkpoint $k: the worker did not say it $([[ $k == 1 ]] && echo stored || echo reused) the baseline"
    echo "$b" >> before.txt
    if (( k == 1 )); then echo "$a" >> first.txt; else echo "$a" >> later.txt; fi
    echo "round $round checkpoint $k: before ${b} s, after ${a} s" >&2
  done
done
before=$(median < before.txt); first=$(median < first.txt); later=$(median < later.txt)
echo "watch of $CHECKPOINTS checkpoints with a reference; $PROMPTS prompts x $TOKENS tokens, $THREADS threads, $ROUNDS rounds (medians)"
echo "  before: every checkpoint          ${before} s"
echo "  after:  checkpoint 1 (stores)     ${first} s"
echo "  after:  checkpoints 2..$CHECKPOINTS (reuse)  ${later} s   ($(awk -v a="$later" -v b="$before" 'BEGIN { printf "%.2f", a / b }') of before)"
echo "  the watch: before $(awk -v b="$before" -v n="$CHECKPOINTS" 'BEGIN { printf "%.1f", b * n }') s," \
  "after $(awk -v f="$first" -v l="$later" -v n="$CHECKPOINTS" 'BEGIN { printf "%.1f", f + l * (n - 1) }') s"
