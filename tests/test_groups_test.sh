#!/bin/bash
# cmake/test_groups_list.cmake against a stand-in for a GoogleTest binary: the groups it writes
# (names, filters, even sizes, disabled tests left out, a listing's printed parameters ignored)
# and how ctest then reads each group's end — passed with a test skipped, skipped when every test
# is, failed when one test fails whatever else skipped.
#
#   tests/test_groups_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: test_groups_test.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "test_groups_test: $*" >&2
  exit 1
}

# The stand-in: lists its tests as GoogleTest does, and runs a filter of them — a test whose name
# holds "Fails" fails, "Skips" skips, any other passes — printing GoogleTest's summary lines.
cat >"$work/fake_gtest" <<'EOF'
#!/bin/bash
listing='Small.
  One
  Two
  DISABLED_Off
Nine.
  T1
  T2
  T3
  T4
  T5
  T6
  T7
  T8
  T9
Params/Odd.
  Case/0  # GetParam() = ("a;b", 4-byte object <00-00 [00 00>)
  Case/1  # GetParam() = ("c;d", 4-byte object <01-00 [00 00>)
DISABLED_Gone.
  Any
Mixed.
  Passes
  Skips
AllSkipped.
  Skips1
  Skips2
FailAndSkip.
  Skips
  Fails
TenSkip.
  Skips0
  Skips1
  Skips2
  Skips3
  Skips4
  Skips5
  Skips6
  Skips7
  Skips8
  Skips9'
if [ "$1" = --gtest_list_tests ]; then
  echo "$listing"
  exit 0
fi
filter=${1#--gtest_filter=}
names=()
if [[ "$filter" == *'.*' ]]; then
  suite=${filter%.\*}
  in=0
  while IFS= read -r line; do
    if [[ "$line" != " "* ]]; then
      [ "$line" = "$suite." ] && in=1 || in=0
    elif [ $in = 1 ]; then
      name=${line#  }
      names+=("$suite.${name%%  #*}")
    fi
  done <<<"$listing"
else
  IFS=: read -r -a names <<<"$filter"
fi
passed=0 skipped=() failed=()
for n in "${names[@]}"; do
  case "$n" in
    *Fails*) failed+=("$n") ;;
    *Skips*) skipped+=("$n") ;;
    *) passed=$((passed + 1)) ;;
  esac
done
plural() { [ "$1" = 1 ] && echo "1 test" || echo "$1 tests"; }
echo "[  PASSED  ] $(plural $passed)."
[ ${#skipped[@]} = 0 ] || echo "[  SKIPPED ] $(plural ${#skipped[@]}), listed below:"
[ ${#failed[@]} = 0 ] || { echo "[  FAILED  ] $(plural ${#failed[@]}), listed below:"; exit 1; }
exit 0
EOF
chmod +x "$work/fake_gtest"

cmake -D "TEST_EXECUTABLE=$work/fake_gtest" -D "TEST_WORKING_DIR=$work" -D MAX_TESTS=8 \
  -D DISCOVERY_TIMEOUT=10 -D "TEST_PROPERTIES=TIMEOUT|77" -D "CTEST_FILE=$work/groups.cmake" \
  -P "$src/cmake/test_groups_list.cmake"

groups=$(sed -n 's/^add_test(\[==\[\([^]]*\)\]==\].*/\1/p' "$work/groups.cmake" | tr '\n' ' ')
expected="Small Nine.part1of2 Nine.part2of2 Params/Odd Mixed AllSkipped FailAndSkip TenSkip.part1of2 TenSkip.part2of2 "
[ "$groups" = "$expected" ] || fail "groups: got '$groups', expected '$expected'"
grep -q -- '--gtest_filter=Small\.\*\]' "$work/groups.cmake" || fail "Small is not run as Small.*"
grep -q -- '--gtest_filter=Nine\.T1:Nine\.T2:Nine\.T3:Nine\.T4:Nine\.T5\]' "$work/groups.cmake" ||
  fail "Nine's first part is not its first five tests"
grep -q -- '--gtest_filter=Nine\.T6:Nine\.T7:Nine\.T8:Nine\.T9\]' "$work/groups.cmake" ||
  fail "Nine's second part is not its last four tests"
grep -q 'Gone\|Off' "$work/groups.cmake" && fail "a disabled test or suite was given a group"
[ "$(grep -c '\[==\[TIMEOUT\]==\] \[==\[77\]==\]' "$work/groups.cmake")" = 9 ] ||
  fail "not every group has the properties asked for"

# ctest reads the groups as it reads any test file.
echo "include($work/groups.cmake)" >"$work/CTestTestfile.cmake"
set +e
ctest --test-dir "$work" >"$work/ctest.out" 2>&1
status=$?
set -e
[ $status != 0 ] || fail "ctest passed with a failing test in FailAndSkip"
expect_line() {
  grep -Eq " $1 \.+[ *]*($2) " "$work/ctest.out" || { cat "$work/ctest.out" >&2; fail "$1 is not '$2'"; }
}
expect_line Mixed Passed
expect_line AllSkipped 'Skipped|Not Run'
expect_line FailAndSkip Failed
expect_line 'Params/Odd' Passed
expect_line Nine.part2of2 Passed
expect_line TenSkip.part2of2 'Skipped|Not Run'
echo "test_groups_test: ok"
