#!/bin/bash
# ferry laid out as installed (PREFIX/bin/ferry, PREFIX/lib/ferry/ferry-agent and, with
# libtorch, libferry-eval.so): it finds its agent and plugin there, with nothing beside
# it and no FERRY_AGENT_BIN / FERRY_EVAL_PLUGIN. Runs examples/first (two local hosts,
# a relay) and `ferry eval --help` through the plugin. Then the docs as `cmake
# --install` lays them out (newcomer report U4): every relative link in them resolves,
# `ferry examples` copies the installed examples, and the demo's workflow finds its
# training programs in lib/ferry with no `-p bin=`. Unprivileged; the package test
# does the same with the real .deb.
# Usage: install_layout_test.sh BIN_DIR SOURCE_DIR [BUILD_DIR]
set -u
bin=$1 src=$2 build=${3:-}
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

if [ -n "$build" ]; then
  inst=$tmp/installed
  cmake --install "$build" --prefix "$inst" >"$tmp/install.log" 2>&1 || bad "cmake --install: $(cat "$tmp/install.log")"
  doc=$inst/share/doc/ferry
  [ -s "$doc/copyright" ] || bad "no $doc/copyright"
  # Every relative link of every installed doc names a file that is there.
  while IFS= read -r md; do
    grep -o '\]([^)# ]*' "$md" | sed 's/^](//' | grep -v -E '^([a-z]+:|$)' | sort -u | while IFS= read -r target; do
      [ -e "$(dirname "$md")/$target" ] || echo "${md#"$doc"/} -> $target"
    done
  done < <(find "$doc" -name '*.md') >"$tmp/broken"
  [ ! -s "$tmp/broken" ] || bad "installed docs link to what is not installed:\n$(cat "$tmp/broken")"
  grep -q "workflows/README.md" "$doc/README.md" && [ -e "$doc/workflows/README.md" ] ||
    bad "the README's link to the language reference"

  cd "$tmp" || exit 1
  "$inst/bin/ferry" examples ex >"$tmp/examples.log" 2>&1 || bad "ferry examples: $(cat "$tmp/examples.log")"
  grep -q "from $doc/examples" "$tmp/examples.log" || bad "ferry examples did not copy the installed ones: $(cat "$tmp/examples.log")"
  cmp -s ex/first/workflow.yaml "$src/examples/first/workflow.yaml" || bad "ex/first/workflow.yaml differs"
  # The demo without -p bin=: its trainers are in lib/ferry, as in the package.
  if [ -e "$inst/lib/ferry/dflash-tiny-data" ]; then
    "$inst/bin/ferry" run ex/dflash-tiny/workflow.yaml -p target_steps=2 -p drafter_steps=2 >"$tmp/demo.log" 2>&1
    for stage in data target drafter reference; do
      "$inst/bin/ferry" status | grep -E "^ *$stage +" | grep -q succeeded ||
        bad "the demo's $stage stage without -p bin: $(cat "$tmp/demo.log"; "$inst/bin/ferry" logs last "$stage" 2>&1)"
    done
  fi
fi
[ $fail = 0 ] && echo "installed layout: agent and plugin found in lib/ferry; docs, examples and the demo"
exit $fail
