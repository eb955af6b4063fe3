#!/usr/bin/env bash
# Builds the parts of slapo that do not link LibTorch (core, space, db, cost, tuner) with
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer into build-sanitize/, and runs
# their test suites there. Exits non-zero on any failing test or sanitizer report: undefined
# behaviour aborts the test (-fno-sanitize-recover), as a memory error or a leak does.
#
# LibTorch is left out: Debian's libtorch is not built with the sanitizers, and its static
# initialisation alone reports leaks that are not the project's. The fuzzers (scripts/fuzz.sh)
# run the parsers under the same sanitizers.
#
# Not part of scripts/test.sh: it takes about eight minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-sanitize}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# Debug (-O0): -O1 took as long in all here (8.3 minutes against 7.7: a longer build, shorter
# tests), and at -O0 a report points at the line.
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DSLAPO_WITH_TORCH=OFF -DSLAPO_BUILD_BENCHMARKS=OFF \
  -DSLAPO_BUILD_TESTS=ON >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-2}"
