#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build, run the whole test suite.
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/format.sh --check   # every C++ source as .clang-format has it
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "${JOBS:-2}"
# The parser fuzzer, for a bounded time, where clang with libFuzzer is available.
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
