#!/bin/bash
# Records an objective table of the tuner-efficiency benchmark (docs/benchmarks.md) with the cost
# model's profiles beside it, so that a replay sees what a live run at this commit would:
#
#   benchmark/record_table.sh benchmark/tables/NAME [PASSES=5] [NPROC=1]
#
# First the space's profiles (`slapo-tune plan` profiles every key; `db profiles --format json`
# writes them to NAME.profiles.json), then PASSES exhaustive passes over the space, each in a
# database of its own, exported as NAME.json, NAME.2.json, ... With NPROC > 1 the trials are jobs
# of that many ranks (single-node). Run it on an idle machine: every trial is timed.
set -euo pipefail
base=${1:?usage: record_table.sh benchmark/tables/NAME [PASSES] [NPROC]}
passes=${2:-5}
nproc=${3:-1}
tune=${TUNE:-./build/slapo-tune}
space="$base.toml"
[ -f "$space" ] || { echo "record_table.sh: $space: no such space file" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$tune" plan --space "$space" --db "$work/profiles.db" --top 1 >/dev/null
"$tune" db profiles --db "$work/profiles.db" --format json >"$base.profiles.json"
for pass in $(seq 1 "$passes"); do
  out="$base.json"
  [ "$pass" -gt 1 ] && out="$base.$pass.json"
  if [ "$nproc" -gt 1 ]; then
    "$tune" single-node --nproc "$nproc" --space "$space" --strategy exhaustive --trials 0 \
      --db "$work/pass$pass.db" >/dev/null
  else
    "$tune" single-device --space "$space" --strategy exhaustive --trials 0 \
      --db "$work/pass$pass.db" >/dev/null
  fi
  "$tune" db export --db "$work/pass$pass.db" --format json >"$out"
  echo "$base: pass $pass of $passes recorded in $out"
done
