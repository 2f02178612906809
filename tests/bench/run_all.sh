#!/usr/bin/env bash
# `make bench`: every benchmark of tests/bench/README.md at its defaults, one after
# another, each printing its own figures. Needs root for the two testbed benches
# (they bring up network namespaces and sshd) and the bench packages
# (scripts/install-deps.sh --bench). qwen35_slice_bench needs a slice written
# first and is left out; see the README.
#   tests/bench/run_all.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: tests/bench/run_all.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
bin=$build/bin

run() {
  echo
  echo "=== $*"
  "$@"
}

run "$bin/status_bench"
run "$bin/tokenizer_bench"
if [ -x "$bin/eval_bench" ]; then  # built with FERRY_WITH_TORCH=ON
  run "$bin/eval_bench"
  run "$bin/eval_growth_bench" --threads 1 --reps 3
  run "$here/sharded_eval_bench.sh" "$build"
fi
run "$here/relay_bench.sh" "$build"
run "$here/hosts_bench.sh" "$build"
run "$here/slurm_bench.sh" "$build"
# The fault suite with its large relays at issue 13's sizes (100,000 files, 16 GiB).
echo
echo "=== FERRY_FAULT_SCALE=full ctest -R fault_suite"
(cd "$build" && FERRY_FAULT_SCALE=full ctest -R fault_suite --output-on-failure --timeout 1800)
