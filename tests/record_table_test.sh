#!/usr/bin/env bash
# benchmark/record_table.sh against a fake slapo-tune whose passes report the step spreads listed
# in $SPREADS, one per run: a noisy pass is run again (RETRIES), a table is written only when
# every pass is recorded, a bad RETRIES is refused with exit code 2.
#
#   bash tests/record_table_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: record_table_test.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "record_table_test: $*" >&2; exit 1; }

cat >"$work/tune" <<'FAKE'
#!/usr/bin/env bash
# plan, db profiles, single-device (one spread from $SPREADS a run), db export
case "$1" in
  plan) ;;
  db) [ "$2" = profiles ] && echo '[]' || echo '[{"pass": true}]' ;;
  single-device)
    n=$(cat "$COUNTER" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$COUNTER"
    read -ra spreads <<<"$SPREADS"
    echo "{\"step_spread_median\":${spreads[$n]}}" ;;
esac
FAKE
chmod +x "$work/tune"
echo '# a space' >"$work/t.toml"
record() {  # SPREADS... -> the script's exit code; its output in $work/out
  rm -f "$work/counter" "$work"/t.*json
  SPREADS="$*" COUNTER="$work/counter" TUNE="$work/tune" bash "$src/benchmark/record_table.sh" \
    "$work/t" 2 >"$work/out" 2>&1 && return 0 || return $?
}

# Two passes, the second noisy once: run again, both recorded.
record 0.01 0.09 0.02 || fail "a pass noisy once was not run again: $(cat "$work/out")"
[ "$(cat "$work/counter")" = 3 ] || fail "expected 3 runs, got $(cat "$work/counter")"
[ -f "$work/t.json" ] && [ -f "$work/t.2.json" ] && [ -f "$work/t.profiles.json" ] ||
  fail "the table's files were not written"
grep -q "pass 2 run again" "$work/out" || fail "the run again was not said: $(cat "$work/out")"

# A pass noisy three times (RETRIES=2): refused, nothing written.
code=0
record 0.01 0.09 0.09 0.09 || code=$?
[ "$code" = 3 ] || fail "a pass noisy in every run: exit $code, expected 3"
[ ! -f "$work/t.json" ] || fail "a refused recording wrote the table"
grep -q "in 3 runs" "$work/out" || fail "the refusal does not say its runs: $(cat "$work/out")"

# RETRIES that is not a whole number: one line, exit code 2.
code=0
RETRIES=two record 0.01 0.01 || code=$?
[ "$code" = 2 ] || fail "RETRIES=two: exit $code, expected 2"
grep -q "RETRIES=two" "$work/out" || fail "RETRIES=two: $(cat "$work/out")"
echo "record_table_test: ok"
