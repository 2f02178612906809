#!/bin/sh
# The demo: the dflash-tiny story on two local hosts (no root, no sshd needed).
# A tiny byte-level Qwen3 target and a DFlash drafter train on `trainer`; each
# drafter checkpoint is relayed to `evaluator` through this machine as it is written
# and evaluated there against a reference drafter. Ends with the eval report, the
# status table, and the run's HTML report (`ferry report`), whose path it prints.
# Usage: scripts/demo.sh [BUILD_DIR] [extra `ferry run` args, e.g. -p wrong_mask=258]
# DEMO_WORKFLOW names another workflow file (scripts/demo-ssh.sh uses it).
set -eu
build="${1:-build}"
[ $# -gt 0 ] && shift
ferry="$build/bin/ferry"
export FERRY_HOME="${FERRY_HOME:-$HOME/.local/share/ferry}"
bin=$(cd "$build/bin" && pwd)
if [ ! -x "$bin/dflash-train-drafter" ] || [ ! -x "$bin/ferry-eval" ]; then
  echo "demo: $bin has no trainers or eval worker; build with FERRY_WITH_TORCH=ON (make demo does)" >&2
  exit 2
fi

workflow="${DEMO_WORKFLOW:-examples/dflash-tiny/watch.yaml}"
echo "== ferry run $workflow   (state in $FERRY_HOME)"
status=0
"$ferry" run "$workflow" -p bin="$bin" "$@" || status=$?
run=$("$ferry" runs --json | sed -n 's/.*"id": "\(dflash-tiny[a-z-]*-[0-9]*\)".*/\1/p' | head -n 1)
echo
echo "== ferry logs $run eval   (the eval report of the last checkpoint)"
# A watching eval's log holds every checkpoint's report: show the last one.
"$ferry" logs "$run" eval | awk '/^DFlash drafter eval/ { last = "" } { last = last $0 "\n" } END { printf "%s", last }'
echo
echo "== ferry status $run"
"$ferry" status "$run"
echo
echo "== ferry report $run   (τ per checkpoint step, timeline, copies, acceptance, diff)"
report=$("$ferry" report "$run") || status=$?
echo "More: $ferry logs $run drafter | $ferry status $run --json | $ferry report $run --json | $ferry runs"
echo "Report: $report"
exit $status
