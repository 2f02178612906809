#!/bin/bash
# `ferry completion bash`, sourced in bash, completes as a user types: driven through
# COMP_WORDS/COMP_CWORD and the function it registers with `complete`, as bash's
# readline would on TAB. Run ids and stage names come from a FERRY_HOME of the
# test's own with two runs in it. Also: every command's --help ends with an example.
# Usage: completion_test.sh FERRY
set -u
ferry=$1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export FERRY_HOME=$home
printf 'name: comp\nstages:\n  build:\n    run: "true"\n  check:\n    needs: build\n    run: "true"\n' >"$home/wf.yaml"
for i in 1 2; do "$ferry" run "$home/wf.yaml" >"$home/run.log" 2>&1 || bad "ferry run: $(cat "$home/run.log")"; done

script=$("$ferry" completion bash) || { echo "FAIL: ferry completion bash"; exit 1; }
source <(echo "$script")
fn=$(complete -p ferry | sed -n 's/.*-F \([^ ]*\) ferry$/\1/p')
[ -n "$fn" ] || { echo "FAIL: no completion function registered for ferry"; exit 1; }

# complete WORD... : completes the last word; prints COMPREPLY
complete_words() {
  COMP_WORDS=("$ferry" "$@")  # the script asks the ferry being completed for run ids
  COMP_CWORD=$#
  COMPREPLY=()
  "$fn"
  echo "${COMPREPLY[*]}"
}
expect() {  # expect "WANT" WORD...
  local want=$1; shift
  local got
  got=$(complete_words "$@")
  [ "$got" = "$want" ] || bad "ferry $*<TAB>: got '$got', want '$want'"
}
expect "status" st
expect "resume report" re
expect "check" hosts c
expect "--json" run --j
expect "--watch" status --wa
expect "last" logs l
expect "bash" completion b
# A workflow argument falls back to file names (-o default): no words of ours.
expect "" run ex
# Newcomer report U12: run ids from the store, a run's stage names, eval's flags.
expect "last comp-2 comp-1" status ""
expect "comp-2 comp-1" resume comp
expect "build check" logs comp-1 ""
expect "check" logs last c
expect "build check" logs --attempt 1 comp-1 ""  # a flag's value is not the run
expect "" logs comp-1 build ""                  # no third positional
expect "build check" logs --db "$home/ferry.db" comp-2 ""
expect "" logs --db "$home/none.db" comp-2 ""   # no such store: nothing, and none made
[ ! -e "$home/none.db" ] || bad "completing made a state database"
expect "" logs nosuch ""
expect "--target --threads --tokenizer --temperature" eval --t
expect "cpu cuda" eval --target t --device ""
expect "chat chat-no-think" eval --prompt-format ch
expect "" _                                     # __complete is hidden
"$ferry" --help | grep -q __complete && bad "ferry --help lists __complete"

"$ferry" completion zsh | grep -q "bashcompinit" || bad "ferry completion zsh"

for cmd in run resume cancel status runs logs report validate "hosts" "hosts check" completion schema; do
  # shellcheck disable=SC2086
  "$ferry" $cmd --help | grep -A1 "^example" | grep -q "ferry" || bad "ferry $cmd --help has no example"
done
"$ferry" tokenize --help 2>&1 | grep -q "^example" || bad "ferry tokenize --help has no example"
# ferry eval's help comes from the eval plugin, built only with libtorch.
if [ -e "$(dirname "$ferry")/libferry-eval.so" ]; then
  "$ferry" eval --help 2>&1 | grep -q "^example" || bad "ferry eval --help has no example"
fi
[ $fail = 0 ] && echo "completion and help examples ok"
exit $fail
