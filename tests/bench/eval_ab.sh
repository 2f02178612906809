#!/bin/bash
# eval_ab.sh: two builds of ferry-eval on the same models, interleaved (issue 45): per
# round, OLD at the default threads, NEW at the default, NEW --threads 1, OLD --threads 1,
# then the medians of each side's plain-decode (the report's baseline pass) and
# speculative ms/token, the medians of the rounds' NEW/OLD and NEW default/--threads 1
# ratios, and whether every non-timing field of the JSON reports that both builds write is
# identical (the fields only one of them writes are listed).
#
#   tests/bench/eval_ab.sh OLD_FERRY_EVAL NEW_FERRY_EVAL MODELS PROMPTS TOKENS ROUNDS [ferry-eval flags]
#
# MODELS holds tgt/ and dft/ (ferry-tiny-models target/drafter). Reports go to
# $EVAL_AB_OUT (default: a temporary folder, printed).
set -euo pipefail
old=$1 new=$2 models=$3 prompts=$4 tokens=$5 rounds=$6
shift 6
out=${EVAL_AB_OUT:-$(mktemp -d /tmp/eval-ab.XXXXXX)}
mkdir -p "$out"
echo "reports in $out"
for i in $(seq 1 "$rounds"); do
  for side in old new new1 old1; do
    case $side in
      old) bin=$old; th=() ;;
      new) bin=$new; th=() ;;
      new1) bin=$new; th=(--threads 1) ;;
      old1) bin=$old; th=(--threads 1) ;;
    esac
    "$bin" --target "$models/tgt" --drafter "$models/dft" --prompts "$prompts" --max-new-tokens "$tokens" \
      "${th[@]}" "$@" --json >"$out/$side-$i.json" 2>/dev/null
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, re, statistics as st, sys
out, rounds = sys.argv[1], int(sys.argv[2])
# Timings, the machine's load, and fields a build may add (fingerprints) are left out.
timing = re.compile(r'second|tpot|per_second|cpu_|speedup|overhead|threads|load|wall|share|warning|contention|fingerprint', re.I)
def strip(o):
    if isinstance(o, dict): return {k: strip(v) for k, v in o.items() if not timing.search(k)}
    if isinstance(o, list): return [strip(v) for v in o]
    return o
def common(a, b, path, added):
    # The fields both builds write; a field only one of them writes (one build is older) is listed.
    if isinstance(a, dict) and isinstance(b, dict):
        for k in set(a) ^ set(b): added.add(path + '/' + k)
        return all(common(a[k], b[k], path + '/' + k, added) for k in set(a) & set(b))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return all(common(x, y, path, added) for x, y in zip(a, b))
    return a == b
r = {s: [json.load(open(f'{out}/{s}-{i}.json')) for i in range(1, rounds + 1)] for s in ('old', 'new', 'new1', 'old1')}
added = set()
same = all(common(strip(a), strip(b), '', added) for s in r for a, b in zip(r['old'], r[s]))
print(f'non-timing fields both builds write identical across all {4 * rounds} reports: {same}')
if added: print(f'fields only one build writes ({len(added)}):', ', '.join(sorted(added)))
for label, key in (('plain decode ms/token', 'baseline'), ('speculative ms/token', 'candidate')):
    v = {s: [1e3 * x[key]['mean_tpot'] for x in r[s]] for s in r}
    ratio = [n / o for n, o in zip(v['new'], v['old'])]
    ratio1 = [n / o for n, o in zip(v['new'], v['new1'])]
    print(f"{label}: old {st.median(v['old']):.3f} | new {st.median(v['new']):.3f} | new --threads 1 "
          f"{st.median(v['new1']):.3f} | old --threads 1 {st.median(v['old1']):.3f}; new/old {st.median(ratio):.2f} "
          f"[{min(ratio):.2f}-{max(ratio):.2f}]; new default / new --threads 1 {st.median(ratio1):.2f} "
          f"[{min(ratio1):.2f}-{max(ratio1):.2f}]")
print('tau old/new:', r['old'][0]['candidate']['tau'], r['new'][0]['candidate']['tau'])
PY
