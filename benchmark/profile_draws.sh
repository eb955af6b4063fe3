#!/bin/bash
# The profile's own noise, as a distribution (docs/benchmarks.md, "Tuner efficiency"): a table's
# recording holds one draw of its profiles, and `auto`'s first trials follow from that draw. This
# profiles the table's space afresh N times (as record_table.sh does: `slapo-tune plan`, then
# `db profiles --format json`), replays the table's recorded passes with each draw in place of the
# recorded profiles, and prints per draw the profile's cost and `auto`'s trials to the optimum and
# to a tie, then their medians (of an even count of draws the worse of the middle two: a "never"
# there is the median):
#
#   benchmark/profile_draws.sh benchmark/tables/NAME [N=6]
#
# Run it on an idle machine: every draw is timed. The replays use one seed (`auto` with the model
# is deterministic given its profiles). KEEP=DIR keeps each draw's table and profiles in DIR/1, ...
set -euo pipefail
base=${1:?usage: profile_draws.sh benchmark/tables/NAME [N]}
draws=${2:-6}
tune=${TUNE:-./build/slapo-tune}
replay=${REPLAY:-./build/benchmark/tuner_efficiency}
name=$(basename "$base")
[ -f "$base.toml" ] || { echo "profile_draws.sh: $base.toml: no such space file" >&2; exit 2; }
[ -f "$base.json" ] || { echo "profile_draws.sh: $base.json: no recorded pass" >&2; exit 2; }
if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi

for i in $(seq 1 "$draws"); do
  mkdir -p "$work/$i"
  cp "$base".toml "$base".json "$work/$i/"
  for more in "$base".[0-9].json; do [ -f "$more" ] && cp "$more" "$work/$i/"; done
  "$tune" plan --space "$work/$i/$name.toml" --db "$work/$i/profiles.db" --top 1 >/dev/null \
    2>"$work/$i/plan.log" || { cat "$work/$i/plan.log" >&2; exit 1; }
  "$tune" db profiles --db "$work/$i/profiles.db" --format json >"$work/$i/$name.profiles.json"
done
# Replayed after every draw is recorded: a replay is not timed, but the draws are.
for i in $(seq 1 "$draws"); do
  # Its exit status says whether the table's targets were met, which a draw may miss: what it
  # prints is read instead, and a replay that printed no row for auto is an error.
  out=$("$replay" "$work/$i/$name" --seeds 1 --replay-seeds 1 2>&1 || true)
  profile=$(sed -n 's/^profiles recorded beside it: [0-9]*, .* = \([0-9.]*\) mean recorded trials.*/\1/p' <<<"$out")
  if ! read -r to_optimum to_tie < <(awk '$1 == "auto" && NF == 11 {print $2, $4}' <<<"$out"); then
    echo "profile_draws.sh: the replay of draw $i printed no row for auto:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "draw $i: profile $profile trials; auto to the optimum $to_optimum, to a tie $to_tie"
done | tee "$work/draws.txt"
awk -v name="$name" '
  function median(a, n,   i, j, t) {
    for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int(n / 2) + 1]  # the upper median: of an even count, the worse of the middle two
  }
  function trials(x) { sub(/,$/, "", x); return x == "never" ? 1e9 : x + 0 }
  function shown(x) { return x >= 1e9 ? "never" : sprintf("%.1f", x) }
  { ++n; p[n] = $4 + 0; o[n] = trials($10); t[n] = trials($14); never += t[n] >= 1e9 }
  END {
    mp = median(p, n); mo = median(o, n); mt = median(t, n)
    printf "%s: %d draws; median profile %.1f trials, auto to the optimum %s, to a tie %s (never: %d of %d); profile + auto to a tie: %s\n",
      name, n, mp, shown(mo), shown(mt), never, n, shown(mp + mt)
  }' "$work/draws.txt"
