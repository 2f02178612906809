#!/usr/bin/env bash
# Functions of 80 lines or more in ferry's own sources (.cc outside tests/ and
# examples/), measured as the architecture reviews measure them: the start and end
# lines Universal Ctags gives each function. Lists them, longest first, and fails
# when there are more than MAX. `make check` runs it with the count the tree holds
# now: split a function to make room, and lower the count when one is split.
#
#   scripts/long-functions.sh MAX
set -euo pipefail
max=${1:?usage: scripts/long-functions.sh MAX}
cd "$(dirname "$0")/.."
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "long-functions.sh: needs Universal Ctags (apt-get install universal-ctags)" >&2
  exit 2
fi
# The files git tracks or would (not ignored), as they stand in the working tree.
mapfile -t sources < <(git ls-files --cached --others --exclude-standard '*.cc' | grep -v '^tests/\|^examples/' |
  while read -r f; do [ -f "$f" ] && echo "$f"; done | sort -u)
long=$(ctags --fields=+ne --c++-kinds=f -o - "${sources[@]}" |
  awk -F'\t' '{for(i=4;i<=NF;i++){if($i~/^line:/)s=substr($i,6);if($i~/^end:/)e=substr($i,5)} if(e-s+1>=80)print e-s+1,$2":"s,$1}' |
  sort -rn)
count=$(printf '%s' "$long" | grep -c . || true)
[ -n "$long" ] && printf '%s\n' "$long"
echo "functions of 80 lines or more: $count (at most $max)"
if [ "$count" -gt "$max" ]; then
  echo "long-functions.sh: $count functions of 80 lines or more, more than $max: split the new one" >&2
  exit 1
fi
