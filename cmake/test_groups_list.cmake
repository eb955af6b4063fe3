# Run after each build of a test binary (cmake/test_groups.cmake): lists its GoogleTest tests and
# writes CTEST_FILE, the ctest tests that run them in groups of at most MAX_TESTS of one suite.
#
# Inputs (-D): TEST_EXECUTABLE, TEST_WORKING_DIR, MAX_TESTS, DISCOVERY_TIMEOUT, CTEST_FILE, and
# TEST_PROPERTIES (set_tests_properties' NAME VALUE pairs, `|` between the words).
include(${CMAKE_CURRENT_LIST_DIR}/split_evenly.cmake)

execute_process(
  COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
  WORKING_DIRECTORY "${TEST_WORKING_DIR}"
  TIMEOUT ${DISCOVERY_TIMEOUT}
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  file(REMOVE "${CTEST_FILE}")
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests: exit ${result}\n${listing}${errors}")
endif()

# A line is a suite ("Suite." or "Prefix/Suite.", maybe "  # TypeParam = ...") or, indented, one
# of its tests ("  Name" or "  Name/3  # GetParam() = ..."). The comments go first: their printed
# values may hold the `;` and `[` that CMake's lists treat as syntax.
string(REGEX REPLACE "  #[^\n]*" "" listing "${listing}")
string(REPLACE ";" "" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")

set(suites "")  # in the binary's order
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+)\\.$")
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set("tests_of_${suite}" "")
  elseif(line MATCHES "^  ([^ ]+)$" AND DEFINED suite)
    set(test "${CMAKE_MATCH_1}")  # (every MATCHES below clears CMAKE_MATCH_1)
    # GoogleTest lists disabled tests and never runs them unless asked: no group is made for them.
    if(NOT test MATCHES "^DISABLED_" AND NOT suite MATCHES "(^|/)DISABLED_")
      list(APPEND "tests_of_${suite}" "${test}")
    endif()
  endif()
endforeach()

string(REPLACE "|" ";" properties "${TEST_PROPERTIES}")
set(script "# Written by cmake/test_groups_list.cmake from ${TEST_EXECUTABLE} --gtest_list_tests.\n")
foreach(suite IN LISTS suites)
  set(tests "${tests_of_${suite}}")
  if(NOT tests)
    continue()
  endif()
  slapo_split_evenly("${tests}" ${MAX_TESTS} part)
  math(EXPR last "${part_count} - 1")
  foreach(part RANGE ${last})
    if(part_count EQUAL 1)
      set(name "${suite}")
      set(filter "${suite}.*")
    else()
      math(EXPR shown "${part} + 1")
      set(name "${suite}.part${shown}of${part_count}")
      list(TRANSFORM part_${part} PREPEND "${suite}." OUTPUT_VARIABLE chunk)
      string(JOIN ":" filter ${chunk})
    endif()
    # Skipped, every one of its tests ("[  SKIPPED ] 4 tests, listed below:" of a group of 4; the
    # "] " before the count: 14 is not 4). A group with a test failed or passed is not.
    list(LENGTH part_${part} in_group)
    set(skipped "\\[  SKIPPED \\] ${in_group} tests?, listed below")
    string(APPEND script
           "add_test([==[${name}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY "
           "[==[${TEST_WORKING_DIR}]==] SKIP_REGULAR_EXPRESSION [==[${skipped}]==]")
    foreach(word IN LISTS properties)
      string(APPEND script " [==[${word}]==]")
    endforeach()
    string(APPEND script ")\n")
  endforeach()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
