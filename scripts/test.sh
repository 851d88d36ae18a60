#!/usr/bin/env bash
# `make test`: every test against real services on 127.0.0.1 (scripts/services.sh), in three runs.
#
# Swift Testing runs every test, synchronous or not, on the cooperative pool: one thread per core. A
# test that blocks one (a minute-long render; a synchronous libpq or librdkafka call; a child process)
# holds up every other test's awaits, an in-process worker's among them, and on a 2-core machine their
# deadlines then measure that queue. Measured with a 50 ms sleep in a loop, in one run of all the
# service suites: no await resumed for the first 38 s. So the suites run apart, by how they wait:
#   workers   AvatarWorkerTests: async tests around in-process workers (their blocking setup runs
#             off the pool, Tests/TestEnvironment/OffPool.swift); the longest stall left is ~2 s;
#   services  the other targets' integration and unit tests, mostly synchronous;
#   images    the CPU-bound image and CLI suites;
#   fuzz      the C that reads uploads under libFuzzer, ASan and UBSan (scripts/fuzz.sh smoke): the
#             regression inputs, then each harness for FUZZ_SMOKE_SECONDS (60) from its seeds;
#   links     every relative Markdown link resolves to a file and heading (scripts/check-links.py, as `make check`).
#
# Every run always runs, each logged whole to $AVATAR_RUN_DIR/test-NAME.log. When one fails, the last
# lines printed name every failed test and the issues it recorded, so a CI log that keeps only its
# tail still says what broke.
set -uo pipefail
cd "$(dirname "$0")/.."
run="${AVATAR_RUN_DIR:-.run}"
swift=${SWIFT:-swift}
read -r -a flags <<<"${SWIFT_BUILD_FLAGS:-}"

scripts/services.sh start || exit
trap 'scripts/services.sh stop' EXIT
set -a; source "$run/env"; set +a
export AVATAR_REQUIRE_SERVICES=1

"$swift" build --build-tests "${flags[@]}" || exit
# The face model beside the built worker, where its render helpers look for it.
scripts/fetch-face-model.sh "$("$swift" build "${flags[@]}" --show-bin-path)" || exit

status=0 logs=()
logged_run() { # name, then the command
  local name=$1 log="$run/test-$1.log"; shift
  logs+=("$log")
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "make test: the $name run failed (exit $rc)"; status=$rc; }
}
suite_run() { logged_run "$1" "$swift" test --skip-build "${flags[@]}" "${@:2}"; }
logged_run links python3 scripts/check-links.py
suite_run workers --filter AvatarWorkerTests
suite_run services --skip AvatarWorkerTests --skip ImagingTests --skip CLITests
# The image suites render many photos at once in one process, and libvips compiles and frees liborc programs as
# each render builds and ends its operations. Debian 12's liborc 0.4.33 crashed this run once (SIGSEGV in its code
# allocator, orc_code_allocate_codemem) with renders running in parallel; the worker renders one job per helper
# process, so it never compiles on two threads at once. So the in-process image suites run libvips' plain C
# paths (VIPS_NOVECTOR); the render helpers the other suites start still use liborc (they start with an empty
# environment).
VIPS_NOVECTOR=1 suite_run images --filter ImagingTests --filter CLITests
logged_run fuzz env SWIFT="$swift" FUZZ_SECONDS="${FUZZ_SMOKE_SECONDS:-60}" FUZZ_JOBS="${FUZZ_JOBS:-2}" scripts/fuzz.sh smoke

if [ "$status" -ne 0 ]; then
  echo
  echo "make test: FAILED. Failed tests and their issues (whole logs: ${logs[*]}):"
  grep -h -E '^✘ |^error: |^fuzz: .*(FAILED|fails)|^check-links: FAILED' "${logs[@]}" |
    tail -n 60
  # A lost database connection in a failed test: whether Postgres ended the backend (a test's
  # pg_terminate_backend, a crash) or the client did.
  echo "make test: Postgres's own account of ended sessions ($run/postgres/server.log):"
  grep -h -E 'FATAL|PANIC|terminat|was terminated by signal' "$run/postgres/server.log" 2>/dev/null | tail -n 100
fi
exit "$status"
