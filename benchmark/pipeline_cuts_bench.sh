#!/usr/bin/env bash
# gpt-mini at two pipeline stages: the even split of the blocks (stage 2 begins at block 3) against
# the balanced default (block 4: the last stage also runs the LM head, worth 2.3 blocks;
# models/pipeline_cuts.h), side by side, for each schedule and micro-batch count, over ROUNDS
# rounds (default 3) that alternate the two — one trial at a time. Prints the median step of each
# and their ratio. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SPACE=benchmark/spaces/gpt-mini-pipeline-cuts.toml
ROUNDS=${ROUNDS:-3}

step_ms() {  # schedule micro_batches cut -> median step (ms)
  ./build/slapo-tune trial --space "$SPACE" --nproc 2 --json --timeout 900 \
    --config "{\"pp\": 2, \"micro_batches\": $2, \"pipeline_schedule\": \"$1\", \"cuts\": [$3]}" | tail -n 1 |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["metrics"]["step_ms_median"] if r["status"] == "ok" else "nan")'
}

printf '%-16s %12s %12s %8s\n' layout "even [3]" "balanced [4]" ratio
for schedule in 1f1b gpipe; do
  for m in 1 4 8; do
    even=() balanced=()
    for _ in $(seq "$ROUNDS"); do
      even+=("$(step_ms "$schedule" "$m" 3)")
      balanced+=("$(step_ms "$schedule" "$m" 4)")
    done
    python3 -c '
import statistics, sys
name, rounds = sys.argv[1], int(sys.argv[2])
even = [float(x) for x in sys.argv[3:3 + rounds]]
balanced = [float(x) for x in sys.argv[3 + rounds:]]
e, b = statistics.median(even), statistics.median(balanced)
print(f"{name:<16} {e:12.1f} {b:12.1f} {b / e:8.2f}")
' "$schedule m=$m" "$ROUNDS" "${even[@]}" "${balanced[@]}"
  done
done
