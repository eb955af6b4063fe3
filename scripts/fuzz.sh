#!/usr/bin/env bash
# Builds the fuzzers with clang (libFuzzer + ASan + UBSan) and runs each for a bounded time
# (default 30 s in all, split between them) under a memory limit: the expression parser, the
# space-file loader and compiler, the configuration parser. Skips, with a message, where clang's
# libFuzzer is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
# The probe and each fuzzer's working corpus, removed however the script ends.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if ! command -v clang++ >/dev/null 2>&1 || \
   ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long){return 0;}' | \
     clang++ -x c++ -fsanitize=fuzzer - -o "$scratch/probe" 2>/dev/null; then
  echo "fuzz: skipped (clang with libFuzzer not available)"
  exit 0
fi
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S . -B build-fuzz "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DSLAPO_BUILD_FUZZERS=ON -DSLAPO_WITH_TORCH=OFF \
  -DSLAPO_BUILD_TESTS=OFF -DSLAPO_BUILD_BENCHMARKS=OFF >/dev/null
fuzzers=(expression space_file config)
cmake --build build-fuzz --target "${fuzzers[@]/%/_fuzz}" -j "${JOBS:-2}" >/dev/null
each=$(( seconds / ${#fuzzers[@]} ))
(( each > 0 )) || each=1
for name in "${fuzzers[@]}"; do
  work="$scratch/$name"
  mkdir -p "$work"
  cp fuzz/corpus_"$name"/* "$work"/
  # Exits non-zero on any crash, leak, sanitizer report, timeout, or memory past the limits (a
  # parser must bound what it allocates, whatever the input).
  ./build-fuzz/fuzz/"$name"_fuzz -max_total_time="$each" -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 "$work" \
    2>build-fuzz/"$name".log || { tail -50 build-fuzz/"$name".log; exit 1; }
  runs=$(grep -E "stat::number_of_executed_units" build-fuzz/"$name".log | awk '{print $2}')
  echo "fuzz: $name, ${each}s, ${runs:-?} inputs, no crash"
  rm -rf "$work"
done
