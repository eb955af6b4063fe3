#!/bin/bash
# Records an objective table of the tuner-efficiency benchmark (docs/benchmarks.md) with the cost
# model's profiles beside it, so that a replay sees what a live run at this commit would:
#
#   benchmark/record_table.sh benchmark/tables/NAME [PASSES=5] [NPROC=1]
#
# First the space's profiles (`slapo-tune plan` profiles every key; `db profiles --format json`
# writes them to NAME.profiles.json), then PASSES exhaustive passes over the space, each in a
# database of its own, exported as NAME.json, NAME.2.json, ... (PASSES=0: the profiles alone, the
# passes kept). With NPROC > 1 the trials are jobs of that many ranks (single-node). Run it on an
# idle machine: every trial is timed.
#
# A pass whose trials' steps spread by more than SPREAD_MAX (median of (p90 - p10) / median step,
# the run's "noise" line; default 0.05) ran on a machine too noisy for a table: it is run again,
# up to RETRIES more times (default 2: a burst of a neighbour's load passes, a noisy night does
# not), and then the recording stops with an error and the table's files are left as they were —
# the files are written into place only once every pass is recorded. (The adopted recordings' passes spread by
# 1.5-3.2%; one made on a noisy night of this machine by 7-8%, its configurations' passes apart
# by a median 14%.)
set -euo pipefail
base=${1:?usage: record_table.sh benchmark/tables/NAME [PASSES] [NPROC]}
passes=${2:-5}
nproc=${3:-1}
tune=${TUNE:-./build/slapo-tune}
spread_max=${SPREAD_MAX:-0.05}
retries=${RETRIES:-2}
space="$base.toml"
[ -f "$space" ] || { echo "record_table.sh: $space: no such space file" >&2; exit 2; }
[[ "$retries" =~ ^[0-9]+$ ]] ||
  { echo "record_table.sh: RETRIES=$retries: expected a whole number of runs again (0, 1, 2...)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$tune" plan --space "$space" --db "$work/profiles.db" --top 1 >/dev/null
"$tune" db profiles --db "$work/profiles.db" --format json >"$work/profiles.json"
# One exhaustive pass into $work/pass$1.db; prints the steps' median spread (empty: none reported).
run_pass() {
  local summary
  rm -f "$work/pass$1.db"
  if [ "$nproc" -gt 1 ]; then
    summary=$("$tune" single-node --nproc "$nproc" --space "$space" --strategy exhaustive \
      --trials 0 --db "$work/pass$1.db" --json | tail -1)
  else
    summary=$("$tune" single-device --space "$space" --strategy exhaustive --trials 0 \
      --db "$work/pass$1.db" --json | tail -1)
  fi
  sed -n 's/.*"step_spread_median":\([0-9.eE+-]*\).*/\1/p' <<<"$summary"
}
for pass in $(seq 1 "$passes"); do
  for attempt in $(seq 0 "$retries"); do
    spread=$(run_pass "$pass")
    if [ -z "$spread" ]; then
      echo "record_table.sh: pass $pass of $space reported no step spread" >&2
      exit 1
    fi
    awk -v s="$spread" -v m="$spread_max" 'BEGIN {exit !(s > m)}' || break
    if [ "$attempt" -eq "$retries" ]; then
      echo "record_table.sh: pass $pass of $space: the steps spread by a median $spread, over" \
        "SPREAD_MAX=$spread_max, in $((retries + 1)) runs: the machine is too noisy to record;" \
        "$base.* left as they were" >&2
      exit 3
    fi
    echo "$base: pass $pass run again: its steps spread by a median $spread (SPREAD_MAX=$spread_max)"
  done
  "$tune" db export --db "$work/pass$pass.db" --format json >"$work/pass$pass.json"
  echo "$base: pass $pass of $passes recorded (steps spread by a median $spread)"
done
mv "$work/profiles.json" "$base.profiles.json"
# An earlier recording's passes beyond this one's count go; PASSES=0 re-records the profiles alone.
[ "$passes" -gt 0 ] && rm -f "$base".[0-9].json
for pass in $(seq 1 "$passes"); do
  out="$base.json"
  [ "$pass" -gt 1 ] && out="$base.$pass.json"
  mv "$work/pass$pass.json" "$out"
done
echo "$base: the profiles and $passes passes written to $base.*"
