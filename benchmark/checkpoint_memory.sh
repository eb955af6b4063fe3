#!/usr/bin/env bash
# What activation checkpointing saves, peak tensor bytes and step, side by side for one or more
# builds (docs/benchmarks.md, "Cost model", eighteenth session): gpt-mini at sequence 128 and 16
# samples (activations set its peaks) and gpt-neo-125m's wider block at 4 samples (weights and
# their gradients set them), 0, half or all blocks checkpointed; one trial at a time.
#
#   bash benchmark/checkpoint_memory.sh [SLAPO_TUNE ...]     (default: build/slapo-tune)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- build/slapo-tune
for tune in "$@"; do
  [ -x "$tune" ] || { echo "checkpoint_memory.sh: $tune: not an executable slapo-tune" >&2; exit 2; }
done
row() {  # TUNE LABEL SPACE CONFIG
  "$1" trial --space "$3" --config "$4" --json | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["metrics"]
peak, ms = int(d["peak_bytes"]), d["step_ms_median"]
print(f"{sys.argv[1]:<32} {peak:>12} bytes {ms:>9.1f} ms")' "$2"
}
for tune in "$@"; do
  echo "== $tune"
  for k in 0 3 6; do
    row "$tune" "gpt-mini s128 b16, $k of 6" benchmark/spaces/cost-heldout-gpt-mini.toml \
      "{\"batch_size\":16,\"ckpt_layers\":$k,\"attn\":\"naive\",\"micro_batches\":1}"
  done
  for k in 0 2 4; do
    row "$tune" "gpt-neo 4x768 b4, $k of 4" benchmark/spaces/checkpoint-memory-neo.toml \
      "{\"batch_size\":4,\"ckpt_layers\":$k}"
  done
done
