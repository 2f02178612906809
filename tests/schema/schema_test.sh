#!/bin/bash
# The workflow schema (workflows/workflow.schema.json, `ferry schema`) against the
# files ferry itself judges: ajv must find every example valid, and reject every held
# bad file that `ferry validate` rejects, except those semantic_only.txt lists (which
# it must accept: a list that no longer matches fails too).
# Usage: schema_test.sh FERRY SOURCE_DIR
set -u
ferry=$1 src=$2
here="$src/tests/schema"
fail=0
bad() { echo "FAIL: $*"; fail=1; }

npm_dir="${FERRY_NPM_DIR:-/var/cache/ferry/npm}"
if [ ! -f "$npm_dir/node_modules/ajv/package.json" ]; then
  echo "FAIL: no ajv in $npm_dir: run scripts/install-deps.sh --test"
  exit 1
fi

"$ferry" schema | cmp -s - "$src/workflows/workflow.schema.json" ||
  bad "ferry schema differs from workflows/workflow.schema.json (rebuild)"

mapfile -t examples < <(find "$src/examples" -name '*.yaml' | sort)
[ "${#examples[@]}" -ge 3 ] || bad "found only ${#examples[@]} example workflows"
mapfile -t malformed < <(find "$src/tests/workflows/malformed" -name '*.yaml' | sort)
verdicts=$(node "$here/validate_workflows.cjs" <("$ferry" schema) "${examples[@]}" "${malformed[@]}") ||
  { echo "FAIL: the validator did not run"; exit 1; }
verdict() { grep -F "$1: " <<<"$verdicts" | head -n 1; }

for f in "${examples[@]}"; do
  "$ferry" validate "$f" >/dev/null 2>&1 || bad "ferry validate rejects the example $f"
  v=$(verdict "$f")
  [ "$v" = "$f: valid" ] || bad "schema: $v"
done
for f in "${malformed[@]}"; do
  name=$(basename "$f")
  "$ferry" validate "$f" >/dev/null 2>&1
  [ $? = 2 ] || bad "ferry validate does not reject $name with exit 2"
  v=$(verdict "$f")
  if grep -q "^$name " "$here/semantic_only.txt"; then
    [ "$v" = "$f: valid" ] || bad "schema rejects $name, listed in semantic_only.txt as beyond it: $v"
  else
    case "$v" in "$f: invalid: "*) ;; *) bad "schema accepts $name, which ferry validate rejects" ;; esac
  fi
done
[ $fail = 0 ] && echo "schema and ferry validate agree on ${#examples[@]} examples and ${#malformed[@]} bad files"
exit $fail
