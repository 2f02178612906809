#!/bin/bash
# ferry laid out as installed (PREFIX/bin/ferry, PREFIX/lib/ferry/ferry-agent and, with
# libtorch, libferry-eval.so): it finds its agent and plugin there, with nothing beside
# it and no FERRY_AGENT_BIN / FERRY_EVAL_PLUGIN. Runs examples/first (two local hosts,
# a relay) and `ferry eval --help` through the plugin. Unprivileged; the package test
# does the same with the real .deb.
# Usage: install_layout_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

mkdir -p "$tmp/prefix/bin" "$tmp/prefix/lib/ferry"
cp "$bin/ferry" "$tmp/prefix/bin/"
cp "$bin/ferry-agent" "$tmp/prefix/lib/ferry/"
[ ! -e "$bin/libferry-eval.so" ] || cp "$bin/libferry-eval.so" "$tmp/prefix/lib/ferry/"
unset FERRY_AGENT_BIN FERRY_EVAL_PLUGIN FERRY_SEND_EVAL_WORKER
export FERRY_HOME="$tmp/home"

"$tmp/prefix/bin/ferry" run "$src/examples/first/workflow.yaml" >"$tmp/run.log" 2>&1 ||
  bad "examples/first with the agent in lib/ferry: $(cat "$tmp/run.log")"
"$tmp/prefix/bin/ferry" logs last check 2>&1 | grep -q "evaluator has all 200 lines" ||
  bad "the relayed file did not arrive whole"
if [ -e "$tmp/prefix/lib/ferry/libferry-eval.so" ]; then
  "$tmp/prefix/bin/ferry" eval --help >"$tmp/eval.log" 2>&1 || bad "ferry eval --help: $(cat "$tmp/eval.log")"
  grep -q "^usage: ferry eval" "$tmp/eval.log" || bad "ferry eval --help: $(cat "$tmp/eval.log")"
fi
[ $fail = 0 ] && echo "installed layout: agent and plugin found in lib/ferry"
exit $fail
