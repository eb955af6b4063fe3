#!/usr/bin/env bash
# What running the LibTorch test binaries' tests in groups saves (cmake/test_groups.cmake): the
# tests labelled `libtorch` run by ctest with the same jobs twice, one run after the other — each
# test a process of its own (-DSLAPO_TEST_GROUPS=OFF), then in groups of up to 8 of a suite, a
# process each (ON) — in an existing build directory, which is reconfigured for each run (only the
# test binaries relink) and left grouped, as the project builds by default.
#
#   bash benchmark/test_processes.sh [BUILD_DIR]   # default build; JOBS=2; about 10 minutes here
#
# Prints each run's tests, wall, user and system time and the ratios. Every test must pass in both
# runs (it stops at the first that does not). Run it on an idle machine: the tests are timed whole.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${JOBS:-2}
[ -f "$build/CMakeCache.txt" ] ||
  { echo "test_processes.sh: $build: not a configured build directory (bash scripts/build.sh)" >&2; exit 2; }
results=$(mktemp)
trap 'rm -f "$results" "$results.time"; cmake -S . -B "$build" -DSLAPO_TEST_GROUPS=ON >/dev/null' EXIT
for groups in OFF ON; do
  cmake -S . -B "$build" -DSLAPO_TEST_GROUPS=$groups >/dev/null
  cmake --build "$build" -j "$jobs" >/dev/null
  count=$(ctest --test-dir "$build" -N -L libtorch | sed -n 's/^Total Tests: //p')
  log="$build/test_processes.$groups.log"
  /usr/bin/time -f "%e %U %S" -o "$results.time" \
    ctest --test-dir "$build" -L libtorch -j "$jobs" --output-on-failure >"$log" 2>&1 ||
    { tail -30 "$log"; echo "test_processes.sh: a test failed with SLAPO_TEST_GROUPS=$groups ($log)" >&2; exit 1; }
  echo "$groups $count $(cat "$results.time")" >>"$results"
done
awk '{wall[NR] = $3; cpu[NR] = $4 + $5}
     {printf "%-26s %4d ctest tests: wall %6.1f s, user %6.1f s, sys %5.1f s\n",
             ($1 == "OFF" ? "a process per test" : "a process per group"), $2, $3, $4, $5}
     END {printf "grouped / per test: wall %.3f, CPU (user + sys) %.3f\n", wall[2] / wall[1], cpu[2] / cpu[1]}' "$results"
