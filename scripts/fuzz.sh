#!/usr/bin/env bash
# Builds the expression fuzzer with clang (libFuzzer + ASan + UBSan) and runs it for a bounded
# time (default 30 s). Skips, with a message, where clang's libFuzzer is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
if ! command -v clang++ >/dev/null 2>&1 || \
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' | \
     clang++ -x c++ -fsanitize=fuzzer - -o /tmp/slapo-fuzz-probe 2>/dev/null; then
  echo "fuzz: skipped (clang with libFuzzer not available)"
  exit 0
fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DSLAPO_BUILD_FUZZERS=ON -DSLAPO_WITH_TORCH=OFF \
  -DSLAPO_BUILD_TESTS=OFF -DSLAPO_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz --target expression_fuzz -j "${JOBS:-2}" >/dev/null
work=$(mktemp -d)
cp fuzz/corpus/* "$work"/
# The fuzzer exits non-zero on any crash, leak, sanitizer report or timeout.
./build-fuzz/fuzz/expression_fuzz -max_total_time="$seconds" -max_len=1024 -timeout=10 \
  -print_final_stats=1 "$work" 2>build-fuzz/fuzz.log || { tail -50 build-fuzz/fuzz.log; exit 1; }
grep -E "stat::number_of_executed_units" build-fuzz/fuzz.log | sed 's/^/fuzz: /'
echo "fuzz: expression parser and evaluator, ${seconds}s, no crash"
rm -rf "$work"
