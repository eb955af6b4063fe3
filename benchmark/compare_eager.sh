#!/usr/bin/env bash
# gpt-mini training step (batch 16 × 128, 2 threads): slapo's C++ model unscheduled and with every
# kernel knob that pays at this size (fused_lm_loss, fused_adamw, the eager fuse_bias_gelu and
# fuse_layer_norm), against the same model in PyTorch eager — in interleaved rounds, one process
# at a time, so that this machine's drift (±10% over minutes) falls on all three alike.
# Prints each round and the median of the rounds' medians. Needs a build (scripts/build.sh) and
# python3-torch (scripts/setup.sh installs it). ROUNDS=5 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
bench() {  # the median step of BM_GptMiniStep/<args> (3 repetitions of 10 steps), in ms
  ./build/benchmark/schedule_bench --benchmark_filter="BM_GptMiniStep/$1/" 2>/dev/null |
    awk '/_median/ {print $2}'
}
plain=() fused=() eager=()
for r in $(seq 1 "$rounds"); do
  plain+=("$(bench 0/0/0/0)")
  fused+=("$(bench 0/1/1/1)")
  eager+=("$(/usr/bin/python3 benchmark/python/gpt_eager.py --threads 2 | awk '{print $2}')")
  echo "round $r: slapo unscheduled ${plain[-1]} ms, slapo kernels ${fused[-1]} ms, eager ${eager[-1]} ms"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "${plain[@]}") f=$(median "${fused[@]}") e=$(median "${eager[@]}")
echo "median of $rounds rounds: slapo unscheduled $p ms, slapo kernels $f ms, PyTorch eager $e ms"
awk -v p="$p" -v f="$f" -v e="$e" \
  'BEGIN {printf "eager / slapo kernels = %.2fx; eager / slapo unscheduled = %.2fx\n", e / f, e / p}'
