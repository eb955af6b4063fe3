#!/usr/bin/env bash
# Early stopping from intermediate values (--early-stop), side by side: the same tuning run of
# examples/python/train_gpt.py over examples/spaces/python-gpt.toml (12 configurations, half of
# them clearly slower: one intra-op thread of two, 1.7x slower at hidden 256), without and then
# with --early-stop, each on a
# fresh database, one after the other (never both at once), for each of three random search orders
# (seeds 1-3: which trials finish first, before any can be compared, is luck). Prints each run's
# wall time, its trials' statuses and its best configuration, then the ratio of the totals. Needs a build (scripts/build.sh)
# and python3-torch (scripts/setup.sh installs both).
# Usage: benchmark/early_stopping.sh [STEPS [HIDDEN]]   (defaults: 24 timed steps, hidden 256)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-24}
HIDDEN=${2:-256}
TUNE=$PWD/build/slapo-tune
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

run() {  # name seed extra-flags... -> seconds on stdout's last line
  local db=$WORK/$1.db seed=$2
  shift 2
  local start end
  start=$(date +%s.%N)
  "$TUNE" single-device --space examples/spaces/python-gpt.toml --db "$db" --strategy random \
    --seed "$seed" --trials 0 --objective samples_per_s --timeout 300 "$@" -- /usr/bin/python3 \
    examples/python/train_gpt.py --batch-size {batch_size} --checkpoint {checkpoint} \
    --threads {threads} --steps "$STEPS" --warmup 2 --hidden "$HIDDEN" >"$WORK/out" 2>&1
  end=$(date +%s.%N)
  "$TUNE" db trials --db "$db" --format json | /usr/bin/python3 -c '
import collections, json, sys
trials = json.load(sys.stdin)
statuses = collections.Counter(t["status"] for t in trials)
best = max((t for t in trials if t["status"] == "ok"), key=lambda t: t["objective"])
print("  statuses:", dict(statuses))
print("  best:", json.dumps(best["config"], sort_keys=True), round(best["objective"], 1), "samples/s")'
  /usr/bin/python3 -c "print($end - $start)"
}

plain=0
early=0
for seed in 1 2 3; do
  echo "seed $seed, without --early-stop:"
  t=$(run plain$seed $seed | tee -a "$WORK/log" | tail -n 1)
  sed -n '$!p' "$WORK/log" | tail -n 2; : >"$WORK/log"
  plain=$(/usr/bin/python3 -c "print($plain + $t)")
  echo "  ($t s)"
  echo "seed $seed, with --early-stop:"
  t=$(run early$seed $seed --early-stop | tee -a "$WORK/log" | tail -n 1)
  sed -n '$!p' "$WORK/log" | tail -n 2; : >"$WORK/log"
  early=$(/usr/bin/python3 -c "print($early + $t)")
  echo "  ($t s)"
done
/usr/bin/python3 -c "
plain, early = $plain, $early
print(f'tuning time, three runs: {plain:.1f} s without, {early:.1f} s with early stopping: '
      f'{early / plain:.2f}x ({100 * (1 - early / plain):.0f}% less)')"
