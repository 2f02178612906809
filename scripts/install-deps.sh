#!/bin/sh
# Installs what ferry needs to build, test and demo from Debian 12's archive.
# Idempotent: installs only what is missing, and runs apt-get update only then.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds pdsh and ansible)
set -eu

packages="build-essential cmake pkg-config git ca-certificates
  libgtest-dev libssh-dev libboost-dev libyaml-cpp-dev libsqlitecpp-dev libsqlite3-dev sqlite3
  libxxhash-dev nlohmann-json3-dev libcli11-dev libtorch-dev
  openssh-server openssh-client iproute2 procps"
if [ "${1:-}" = "--bench" ]; then packages="$packages pdsh ansible"; fi

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
if [ -z "$missing" ]; then
  echo "install-deps: everything is installed"
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
