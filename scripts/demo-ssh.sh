#!/bin/sh
# The demo on SSH hosts: the same dflash-tiny story as scripts/demo.sh, but
# `trainer` and `evaluator` are two hosts of the testbed (tests/testbed/): each its
# own network namespace and sshd, reachable from this machine, not from each other,
# so the checkpoints must be relayed. Needs root (network namespaces) and sshd.
# The testbed is taken down on exit; the run's state stays in $FERRY_HOME.
# Usage: scripts/demo-ssh.sh [BUILD_DIR] [extra `ferry run` args, e.g. -p wrong_mask=258]
set -eu
build="${1:-build}"
[ $# -gt 0 ] && shift
[ "$(id -u)" -eq 0 ] || { echo "demo-ssh: run as root (the testbed uses network namespaces)" >&2; exit 2; }
# scripts/demo.sh checks the build and runs the workflow; this script only supplies hosts.
testbed="${FERRY_DEMO_TESTBED:-/tmp/ferry-demo-testbed}"
tests/testbed/testbed.sh up 2 "$testbed"
trap 'tests/testbed/testbed.sh down "$testbed"' EXIT
. "$testbed/hosts.env"

# The workflow with its local hosts swapped for the two testbed hosts.
workflow="$testbed/workflow-ssh.yaml"
ssh_host() {  # NAME ADDRESS WORKDIR
  printf '  %s:\n    transport: ssh\n    address: %s\n    user: root\n' "$1" "$2"
  printf '    identity: %s\n    known_hosts: %s\n    ssh_config: none\n    workdir: %s\n' \
    "$TESTBED_IDENTITY" "$TESTBED_KNOWN_HOSTS" "$3"
}
{
  sed -n '1,/^hosts:$/p' examples/dflash-tiny/workflow.yaml
  ssh_host trainer "$H1_ADDRESS" "$H1_WORKDIR"
  ssh_host evaluator "$H2_ADDRESS" "$H2_WORKDIR"
  echo
  sed -n '/^stages:$/,$p' examples/dflash-tiny/workflow.yaml
} >"$workflow"

echo "== hosts: trainer $H1_ADDRESS, evaluator $H2_ADDRESS (testbed in $testbed; they cannot reach each other)"
DEMO_WORKFLOW="$workflow" scripts/demo.sh "$build" "$@"
