#!/bin/bash
# The Debian package as a user gets it: cpack builds the .deb from the binaries already
# built (nothing is compiled), dpkg -i installs it, and with the build folder and the
# source tree hidden (a private mount namespace with empty folders over them) the
# installed ferry runs examples/hello, a relay between two local hosts
# (examples/first), and `ferry eval` on tiny models with the OpenMP OpenBLAS found by
# its own RUNPATH. Then dpkg -r must leave none of its files behind. Also runs
# scripts/install-deps.sh twice: on this complete machine it must change nothing.
# Needs root (dpkg); one package test on a machine at a time (a lock).
# Usage: package_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (dpkg -i)"; exit 77; fi
exec 9>/tmp/ferry-package-test.lock
flock 9

fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/ferry-package-test.XXXXXX)
installed=0
cleanup() {
  [ $installed = 0 ] || dpkg -P ferry >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

if dpkg-query -W -f='${Status}' ferry 2>/dev/null | grep -q "install ok installed"; then
  fail "a ferry package is installed already (dpkg -r ferry first)"
fi
[ ! -e /usr/bin/ferry ] || fail "/usr/bin/ferry exists and is not from the ferry package"

echo "== install-deps twice: a complete machine changes nothing"
blas_before=$(update-alternatives --query "libblas.so.3-$(gcc -print-multiarch)" | grep '^Value:' || true)
for i in 1 2; do
  out=$(sh "$src/scripts/install-deps.sh" 2>&1) || fail "install-deps: $out"
  grep -q "nothing to change" <<<"$out" || fail "install-deps run $i changed something: $out"
done
[ "$(update-alternatives --query "libblas.so.3-$(gcc -print-multiarch)" | grep '^Value:' || true)" = "$blas_before" ] ||
  fail "install-deps switched the libblas.so.3 alternative"

echo "== cpack"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack"; }
deb=$(ls "$tmp"/out/ferry_*.deb)
# Newcomer report U4: two CMake strings made one Description joined with ';'.
! dpkg-deb -f "$deb" Description | grep -q ';' || fail "Description holds a ';': $(dpkg-deb -f "$deb" Description)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libopenblas0-openmp libtorch libssh libicu libyaml-cpp libgomp1; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib"
done
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' | grep -v '/$' >"$tmp/files"
for f in /usr/bin/ferry /usr/bin/ferry-tiny-models /usr/lib/ferry/ferry-agent /usr/lib/ferry/ferry-eval \
         /usr/lib/ferry/libferry-eval.so /usr/share/doc/ferry/README.md /usr/share/doc/ferry/examples/hello/workflow.yaml \
         /usr/share/bash-completion/completions/ferry /usr/share/doc/ferry/copyright \
         /usr/share/doc/ferry/workflows/README.md /usr/share/doc/ferry/jobs/eval/README.md; do
  grep -qx "$f" "$tmp/files" || fail "the package lacks $f"
done

echo "== dpkg -i"
installed=1  # from here on, cleanup removes it, even half installed
dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
multiarch=$(gcc -print-multiarch)
for f in /usr/lib/ferry/libferry-eval.so /usr/lib/ferry/ferry-eval /usr/lib/ferry/dflash-train-target \
  /usr/lib/ferry/dflash-train-drafter; do
  runpath=$(readelf -d "$f" | sed -n 's/.*RUNPATH.*\[\(.*\)\]/\1/p')
  [ "$runpath" = "/usr/lib/$multiarch/openblas-openmp" ] || fail "$f: RUNPATH '$runpath'"
  libs=$(ldd "$f")
  grep -q "libblas.so.3 => /usr/lib/$multiarch/openblas-openmp/libblas.so.3" <<<"$libs" ||
    fail "$f does not load the OpenMP OpenBLAS: $(grep blas <<<"$libs")"
done

for f in $(grep -E '^/usr/(bin|lib/ferry)/' "$tmp/files"); do
  libs=$(ldd "$f" 2>&1 || true)  # "not a dynamic executable": the static agent
  ! grep -q "not found" <<<"$libs" || fail "$f: $(grep 'not found' <<<"$libs")"
done

# Inside: only what the package installed (the build and source folders are empty).
cat >"$tmp/inside.sh" <<'EOF'
set -euo pipefail
cd "$TMP"
fail() { echo "FAIL (installed ferry): $*"; exit 1; }
[ -z "$(ls -A "$BUILD" 2>/dev/null)" ] && [ -z "$(ls -A "$SRC")" ] || fail "the build or source folder is still visible"
[ "$(command -v ferry)" = /usr/bin/ferry ] || fail "ferry on PATH is $(command -v ferry)"
ferry --version
examples=/usr/share/doc/ferry/examples
ferry run "$examples/hello/workflow.yaml" >hello.log 2>&1 || { cat hello.log; fail "examples/hello"; }
ferry run "$examples/first/workflow.yaml" >first.log 2>&1 || { cat first.log; fail "examples/first"; }
ferry status --json >status.json
grep -q '"route": "relay"' status.json || grep -q 'relay' first.log || fail "no relay in examples/first: $(cat first.log)"
ferry logs last check | grep -q "evaluator has all 200 lines" || fail "the relayed file did not arrive whole"
case "$(readlink -f "/usr/lib/$MULTIARCH/libblas.so.3")" in
  */blas/libblas.so.3*) ;;
  *) fail "the system's libblas.so.3 is not the reference BLAS here: $(readlink -f "/usr/lib/$MULTIARCH/libblas.so.3")" ;;
esac
ferry-tiny-models suite --out suite >/dev/null
ferry eval --target suite/oracle-target --drafter suite/oracle-agree --prompts suite/oracle-prompts.jsonl \
  --max-new-tokens 16 --threads 2 --no-baseline >eval.log 2>&1 || { cat eval.log; fail "ferry eval"; }
grep -E "^ *BLAS +OpenBLAS" eval.log || fail "the eval's report names no OpenBLAS: $(grep -i blas eval.log)"
grep -q "openblas-openmp" eval.log || fail "the eval did not run on the OpenMP OpenBLAS: $(grep -i blas eval.log)"
bash -c 'source /usr/share/bash-completion/completions/ferry; COMP_WORDS=(ferry st); COMP_CWORD=1; _ferry;
         [ "${COMPREPLY[*]}" = status ]' || fail "the installed completion does not complete 'ferry st'"
# Newcomer report U4: the README's examples/... paths, and the demo with no -p bin=.
ferry examples examples >examples.log 2>&1 || { cat examples.log; fail "ferry examples"; }
ferry validate examples/first/workflow.yaml >/dev/null || fail "ferry validate examples/first/workflow.yaml"
ferry run examples/dflash-tiny/workflow.yaml -p target_steps=2 -p drafter_steps=2 >demo.log 2>&1 || true
for stage in data target drafter reference; do
  ferry status | grep -E "^ *$stage +" | grep -q succeeded ||
    { cat demo.log; ferry logs last "$stage"; fail "the demo's $stage stage without -p bin"; }
done
echo "installed ferry: hello, relay, eval, completion, examples and the demo ok"
EOF
# The system's libblas.so.3 made the reference BLAS inside (as on a machine whose
# alternatives nobody switched): a copy of /etc/alternatives mounted over it.
cp -a /etc/alternatives "$tmp/alternatives"
ln -sfn "/usr/lib/$multiarch/blas/libblas.so.3" "$tmp/alternatives/libblas.so.3-$multiarch"

echo "== the installed ferry, with $build and $src hidden and the reference BLAS selected"
env -i PATH=/usr/bin:/bin HOME="$tmp/home" FERRY_HOME="$tmp/home/ferry" TMP="$tmp" BUILD="$build" SRC="$src" \
  MULTIARCH="$multiarch" unshare --mount bash -c '
    mount --make-rprivate / && mount -t tmpfs none "$BUILD" && mount -t tmpfs none "$SRC" &&
    mount --bind "$TMP/alternatives" /etc/alternatives && bash "$TMP/inside.sh"' || fail "the installed ferry"

echo "== dpkg -r"
dpkg -r ferry >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -r"; }
installed=0
dpkg -P ferry >/dev/null 2>&1 || true
left=""
while read -r f; do [ ! -e "$f" ] || left="$left $f"; done <"$tmp/files"
[ -z "$left" ] || fail "dpkg -r left:$left"
[ ! -e /usr/lib/ferry ] || fail "dpkg -r left /usr/lib/ferry"
echo "package: built, installed, ran, removed"
