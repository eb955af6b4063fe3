# ctest tests that each run a group of a GoogleTest binary's tests in one process.
#
#   slapo_discover_test_groups(TARGET [MAX_TESTS N] [DISCOVERY_TIMEOUT S] [PROPERTIES ...])
#
# gtest_discover_tests makes one ctest test, so one process, of every test. A binary that links
# LibTorch pays about 0.9 s of LibTorch's static initialisation in each process before its first
# test runs — for schedule_test's 124 tests, most of them a few milliseconds, that was 53 s of the
# suite against 6 s for the binary run whole (docs/benchmarks.md, "Test processes"). Here, after
# each build of TARGET, its tests are listed (`--gtest_list_tests`) and every test suite becomes
# ctest tests of at most MAX_TESTS (default 8) of its tests, in the binary's order:
#
#   SuiteName            the whole suite (--gtest_filter=SuiteName.*), when it has MAX_TESTS or fewer
#   SuiteName.part2of3   its second run of consecutive tests, when it has more
#
# A group passes when each of its tests passes or is skipped, and counts as skipped (ctest's "Not
# Run") when every one of them is. A failure names the group; its output names the test. Run one
# test alone with the binary: `build/tests/schedule/schedule_test --gtest_filter=Suite.Test`.
# The groups are bounded so that ctest -j still has work to share out, and one slow suite (the
# distributed tests: seconds each) does not become one test of minutes.
#
# With -DSLAPO_TEST_GROUPS=OFF every test is a ctest test and a process of its own again
# (gtest_discover_tests). Either way the tests carry the label `libtorch` (the binaries given here
# are those that link it): `ctest -L libtorch` runs them alone, as benchmark/test_processes.sh does.
set(SLAPO_TEST_GROUPS_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/test_groups_list.cmake")

function(slapo_discover_test_groups target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MAX_TESTS;DISCOVERY_TIMEOUT" "PROPERTIES")
  if(NOT arg_MAX_TESTS)
    set(arg_MAX_TESTS 8)
  endif()
  if(NOT arg_DISCOVERY_TIMEOUT)
    set(arg_DISCOVERY_TIMEOUT 60)
  endif()
  if(NOT SLAPO_TEST_GROUPS)
    gtest_discover_tests(${target} DISCOVERY_TIMEOUT ${arg_DISCOVERY_TIMEOUT}
                         PROPERTIES LABELS libtorch ${arg_PROPERTIES})
    return()
  endif()
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_groups.cmake")
  # The properties as one argument of the script: `;` would split it, so `|` stands for it
  # (no property value of this project holds one).
  set(properties LABELS libtorch ${arg_PROPERTIES})
  string(REPLACE ";" "|" properties "${properties}")
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
            -D "TEST_WORKING_DIR=${CMAKE_CURRENT_BINARY_DIR}" -D "MAX_TESTS=${arg_MAX_TESTS}"
            -D "DISCOVERY_TIMEOUT=${arg_DISCOVERY_TIMEOUT}" -D "TEST_PROPERTIES=${properties}"
            -D "CTEST_FILE=${ctest_file}" -P "${SLAPO_TEST_GROUPS_SCRIPT}"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  # ctest reads the file when it runs (a binary not built yet has none: a placeholder says so).
  if(NOT EXISTS "${ctest_file}")
    file(WRITE "${ctest_file}"
         "add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n")
  endif()
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${ctest_file}")
endfunction()
