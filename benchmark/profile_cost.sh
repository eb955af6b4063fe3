#!/usr/bin/env bash
# What the cost model's profile of a space costs, one build against another, side by side: for each
# space, `slapo-tune plan --space SPACE --db FRESH.db --top 3 --json` with the first build, then
# the second, each on a fresh database, one after the other (never both at once). Prints, per
# build, the keys profiled whole and derived (its "cost model: profiled" notes: a derived one says
# how in parentheses; the collectives' profile not counted) and the profiling time the plan
# reports. docs/benchmarks.md keeps the figures.
# Usage: benchmark/profile_cost.sh BEFORE_TUNE AFTER_TUNE SPACE.toml...
#   (a build of an earlier commit: `git worktree add ../prev REV && cd ../prev && scripts/build.sh`,
#   or its build/slapo-tune copied before rebuilding)
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: benchmark/profile_cost.sh BEFORE_TUNE AFTER_TUNE SPACE.toml..." >&2; exit 2; }
before=$1
after=$2
shift 2
for tune in "$before" "$after"; do
  [ -x "$tune" ] || { echo "profile_cost.sh: $tune: not an executable" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for space in "$@"; do
  for which in before after; do
    tune=$before
    [ "$which" = after ] && tune=$after
    db="$work/$which.db"
    rm -f "$db"
    "$tune" plan --space "$space" --db "$db" --top 3 --json >"$work/out" 2>"$work/notes"
    profiled=$(grep "cost model: profiled" "$work/notes" | grep -v "the collectives of" || true)
    whole=$(printf "%s" "$profiled" | grep -vc " s (" || true)
    derived=$(printf "%s" "$profiled" | grep -c " s (" || true)
    seconds=$(tail -1 "$work/out" | sed -n 's/.*"profile_s":\([0-9.eE+-]*\).*/\1/p')
    printf '%s %s %s: %s whole, %s derived, profiling %.2f s\n' "$(date -u +%H:%M:%S)" \
      "$space" "$which" "$whole" "$derived" "$seconds"
  done
done
