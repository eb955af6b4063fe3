#!/usr/bin/env bash
# A training step (batch 16 × 128, 2 threads) of gpt-mini (MODEL=gpt, the default) or bert-mini
# (MODEL=bert): slapo's C++ model unscheduled and with every kernel knob that pays at this size
# (fused_lm_loss, fused_adamw, the eager fuse_bias_gelu and fuse_layer_norm), against the same model
# in PyTorch eager (benchmark/python/) — in interleaved rounds, one process at a time, so that this
# machine's drift (±10% over minutes) falls on all three alike. Prints each round and the median of
# the rounds' medians. Needs a build (scripts/build.sh) and python3-torch (scripts/setup.sh
# installs it). ROUNDS=5 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
model=${MODEL:-gpt}
case "$model" in
  gpt) plain_args=BM_GptMiniStep/0/0/0/0/ kernel_args=BM_GptMiniStep/0/1/1/1/ ;;
  bert) plain_args=BM_BertMiniStep/0/ kernel_args=BM_BertMiniStep/1/ ;;
  *) echo "compare_eager.sh: MODEL must be gpt or bert, not '$model'" >&2; exit 2 ;;
esac
bench() {  # the median step (3 repetitions of 10 steps), in ms
  ./build/benchmark/schedule_bench --benchmark_filter="$1" 2>/dev/null | awk '/_median/ {print $2}'
}
plain=() fused=() eager=()
for r in $(seq 1 "$rounds"); do
  plain+=("$(bench "$plain_args")")
  fused+=("$(bench "$kernel_args")")
  eager+=("$(/usr/bin/python3 "benchmark/python/${model}_eager.py" --threads 2 | awk '{print $2}')")
  echo "round $r: slapo unscheduled ${plain[-1]} ms, slapo kernels ${fused[-1]} ms, eager ${eager[-1]} ms"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p=$(median "${plain[@]}") f=$(median "${fused[@]}") e=$(median "${eager[@]}")
echo "$model, median of $rounds rounds: slapo unscheduled $p ms, slapo kernels $f ms, PyTorch eager $e ms"
awk -v p="$p" -v f="$f" -v e="$e" \
  'BEGIN {printf "eager / slapo kernels = %.2fx; eager / slapo unscheduled = %.2fx\n", e / f, e / p}'
