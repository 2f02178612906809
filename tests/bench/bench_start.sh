# Sourced by the benches that take a build folder: how each one starts. The
# sourcing script sets BENCH (its name, for messages) first.

die() { echo "$BENCH: $*" >&2; exit 1; }

# bench_build_dir "$@": the one argument, BUILD_DIR, as BUILD (absolute) and its
# ferry binary as FERRY.
bench_build_dir() {
  (( $# == 1 )) || die "usage: $BENCH.sh BUILD_DIR"
  BUILD=$(realpath -- "$1")
  FERRY="$BUILD/bin/ferry"
}

# bench_needs_agent_and_root WHY: ferry and ferry-agent are built, and we are root
# (WHY says what for).
bench_needs_agent_and_root() {
  [[ -x "$FERRY" && -x "$BUILD/bin/ferry-agent" ]] || die "no $FERRY or ferry-agent: build first"
  [[ $(id -u) -eq 0 ]] || die "must run as root ($1)"
}
