#!/usr/bin/env bash
# Early stopping from intermediate values (--early-stop), side by side: the same tuning run of
# examples/python/train_gpt.py over examples/spaces/python-gpt.toml (12 configurations, half of
# them clearly slower: one intra-op thread of two), without and then with --early-stop, each on a
# fresh database, one after the other (never both at once). Prints each run's wall time, its
# trials' statuses and its best configuration, then the ratio. Needs a build (scripts/build.sh)
# and python3-torch (scripts/setup.sh installs both). Usage: benchmark/early_stopping.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-24}
TUNE=$PWD/build/slapo-tune
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

run() {  # name extra-flags... -> seconds on stdout's last line
  local db=$WORK/$1.db
  shift
  local start end
  start=$(date +%s.%N)
  "$TUNE" single-device --space examples/spaces/python-gpt.toml --db "$db" --strategy random \
    --seed 1 --trials 0 --objective samples_per_s --timeout 300 "$@" -- /usr/bin/python3 \
    examples/python/train_gpt.py --batch-size {batch_size} --checkpoint {checkpoint} \
    --threads {threads} --steps "$STEPS" --warmup 2 >"$WORK/out" 2>&1
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

echo "without --early-stop:"
plain=$(run plain | tee /dev/stderr | tail -n 1)
echo "with --early-stop:"
early=$(run early --early-stop | tee /dev/stderr | tail -n 1)
/usr/bin/python3 -c "
plain, early = $plain, $early
print(f'tuning time: {plain:.1f} s without, {early:.1f} s with early stopping: '
      f'{early / plain:.2f}x ({100 * (1 - early / plain):.0f}% less)')"
