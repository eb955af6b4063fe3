#!/usr/bin/env bash
# gpt-mini training step: slapo's C++ model (no schedule, and checkpointing at 0.5 and 1) against
# the same model in PyTorch eager, one after the other on the same machine (never both at once).
# Needs a build (scripts/build.sh) and python3-torch (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
./build/benchmark/schedule_bench --benchmark_filter='BM_GptMiniStep' 2>/dev/null | grep -E "median|Benchmark"
/usr/bin/python3 benchmark/python/gpt_eager.py --threads 2
