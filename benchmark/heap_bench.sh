#!/usr/bin/env bash
# The heap a model's process runs on (docs/runners.md, "The heap"): the same trial with freed
# memory kept for the next step (slapo's default) and with glibc's defaults (SLAPO_HEAP=system),
# in interleaved rounds, one process at a time — this machine drifts by ±10% over minutes, so
# only side-by-side rounds are compared. The same model in PyTorch eager (benchmark/python/)
# with glibc's defaults and with the same settings given as GLIBC_TUNABLES shows that the
# difference is the allocator's, not slapo's. Prints each round, then the medians and ratios.
#
#   bash benchmark/heap_bench.sh            # gpt-mini, 16 samples of 64 tokens; ROUNDS=5
#   MODEL=bert bash benchmark/heap_bench.sh
#
# Needs a build (scripts/build.sh) and python3-torch (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
model=${MODEL:-gpt}
tune=${TUNE:-./build/slapo-tune}
case "$model" in
  gpt) space=benchmark/tables/gpt-mini-batch-ckpt-attn.toml
       config='{"attn": "naive", "batch_size": 16, "ckpt_ratio": 0.0}' ;;
  bert) space=benchmark/tables/bert-mini-batch-ckpt.toml
        config='{"batch_size": 16, "ckpt_layers": 0}' ;;
  *) echo "heap_bench.sh: MODEL must be gpt or bert, not '$model'" >&2; exit 2 ;;
esac
# slapo's settings (runners/heap_policy.cc) as glibc tunables, for the eager process.
tunables=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647:glibc.malloc.top_pad=268435456

trial() {  # the median step in ms and the max RSS in MB of one trial
  "$tune" trial --space "$space" --config "$config" --json 2>/dev/null | tail -1 |
    /usr/bin/python3 -c 'import json, sys
m = json.load(sys.stdin)["metrics"]
print("%.1f %.0f" % (m["step_ms_median"], m["max_rss_bytes"] / 1e6))'
}
eager() {  # the median step in ms, at the trial's batch and sequence
  /usr/bin/python3 "benchmark/python/${model}_eager.py" --threads 2 --batch 16 --seq 64 |
    awk '{print $2}'
}
kept=() system=() eager_system=() eager_kept=()
for r in $(seq 1 "$rounds"); do
  read -r k k_rss <<<"$(trial)"
  read -r s s_rss <<<"$(SLAPO_HEAP=system trial)"
  es=$(eager)
  ek=$(GLIBC_TUNABLES=$tunables eager)
  kept+=("$k") system+=("$s") eager_system+=("$es") eager_kept+=("$ek")
  echo "round $r: slapo kept $k ms (rss $k_rss MB), slapo system $s ms (rss $s_rss MB);" \
    "eager system $es ms, eager kept $ek ms"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
k=$(median "${kept[@]}") s=$(median "${system[@]}")
es=$(median "${eager_system[@]}") ek=$(median "${eager_kept[@]}")
echo "$model, median of $rounds rounds: slapo kept $k ms, system $s ms; eager system $es ms, kept $ek ms"
awk -v k="$k" -v s="$s" -v es="$es" -v ek="$ek" \
  'BEGIN {printf "kept / system: slapo %.3f, eager %.3f\n", k / s, ek / es}'
