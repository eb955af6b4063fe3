#!/usr/bin/env bash
# gpt-mini training step at two ranks (TP=2, PP=2 with GPipe and 1F1B at several micro-batch
# counts, DP=2) against one process, one layout after the other (never two at once). Prints the
# median step time, its ratio to one process, the measured pipeline bubble (time a stage waits on
# its neighbour, as a share of the step) beside the (p-1)/(m+p-1) formula, and the share of the
# step spent in collectives. Needs a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SPACE=benchmark/spaces/gpt-mini-parallel.toml
TUNE=./build/slapo-tune

trial() {  # config nproc -> one JSON line
  "$TUNE" trial --space "$SPACE" --config "$1" --nproc "$2" --json --timeout 900 | tail -n 1
}

printf '%-34s %10s %8s %10s %10s %10s\n' layout step_ms ratio bubble formula comm
base=""
row() {  # name config nproc stages micro_batches
  local json ms
  json=$(trial "$2" "$3")
  ms=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["step_ms_median"])')
  [ -z "$base" ] && base=$ms
  echo "$json" | python3 -c '
import json, sys
name, base, p, m = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
r = json.load(sys.stdin)
x = r["metrics"]
if r["status"] != "ok":
    print(f"{name:<34} {r['status']}: {r['error']}")
    sys.exit(0)
formula = (p - 1) / (m + p - 1) if p > 1 else 0.0
ms, bubble, comm = x["step_ms_median"], x.get("bubble_share", 0), x.get("comm_share", 0)
print(f"{name:<34} {ms:10.1f} {ms / base:8.2f} {bubble:10.3f} {formula:10.3f} {comm:10.3f}")
' "$1" "$base" "$4" "$5"
}

L='"pipeline_schedule": "1f1b"'
row "1 process (2 threads)"      "{\"tp\": 1, \"pp\": 1, \"dp\": 1, \"micro_batches\": 1, $L}" 1 1 1
row "TP=2"                       "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"micro_batches\": 1, $L}" 2 1 1
row "DP=2"                       "{\"tp\": 1, \"pp\": 1, \"dp\": 2, \"micro_batches\": 1, $L}" 2 1 1
for m in 1 2 4 8; do
  for s in gpipe 1f1b; do
    row "PP=2 $s m=$m" "{\"tp\": 1, \"pp\": 2, \"dp\": 1, \"micro_batches\": $m, \"pipeline_schedule\": \"$s\"}" 2 2 "$m"
  done
done
