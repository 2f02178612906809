#!/bin/bash
# make test: every test in BUILD and, beside them, the torch-free unit and fuzz tests built
# and run again under ASan + UBSan in SAN_BUILD (make sanitize). The suite spends much of
# its time waiting (on sshd, Slurm's one-minute limits, timeouts), so the sanitizer's cold
# build (about 220 files) runs at nice 19 in that idle CPU instead of after the suite;
# nice 19 leaves the suite the CPU whenever it wants it. The sanitizer's output goes to
# SAN_BUILD/test-sanitize.log and is printed once the suite is done.
#
#   scripts/test-all.sh BUILD SAN_BUILD JOBS
set -u
build=$1 san_build=$2 jobs=$3
mkdir -p "$san_build"
san_log=$san_build/test-sanitize.log

set -m  # the sanitizer's make in a process group of its own, so an interrupt ends it whole
nice -n 19 make --no-print-directory sanitize SAN_BUILD="$san_build" JOBS="$jobs" >"$san_log" 2>&1 &
san=$!
set +m
trap 'kill -- -"$san" 2>/dev/null; exit 130' INT TERM

(cd "$build" && ctest --output-on-failure --timeout 900)
suite=$?

echo "== the ASan + UBSan build and tests ($san_log), started beside the suite"
wait "$san"
sanitized=$?
cat "$san_log"
if [ "$suite" -ne 0 ]; then echo "make test: the suite failed"; exit "$suite"; fi
if [ "$sanitized" -ne 0 ]; then echo "make test: the ASan + UBSan tests failed"; exit "$sanitized"; fi
