#!/bin/sh
# The demo: runs the example workflow on local hosts and shows what ferry recorded.
# Usage: scripts/demo.sh [BUILD_DIR]
set -eu
build="${1:-build}"
ferry="$build/bin/ferry"
export FERRY_HOME="${FERRY_HOME:-$HOME/.local/share/ferry}"

echo "== ferry run examples/hello/workflow.yaml   (state in $FERRY_HOME)"
"$ferry" run examples/hello/workflow.yaml
run=$("$ferry" runs --json | sed -n 's/.*"id": "\(hello-[0-9]*\)".*/\1/p' | head -n 1)
echo
echo "== ferry logs $run report"
"$ferry" logs "$run" report
echo
echo "Try: $ferry status $run --json | $ferry runs | $ferry logs $run flaky --attempt 1"
