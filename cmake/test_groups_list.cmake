# Run after each build of a test binary (cmake/test_groups.cmake): lists its GoogleTest tests and
# writes CTEST_FILE, the ctest tests that run them in groups of at most MAX_TESTS of one suite.
#
# Inputs (-D): TEST_EXECUTABLE, TEST_WORKING_DIR, MAX_TESTS, DISCOVERY_TIMEOUT, CTEST_FILE, and
# TEST_PROPERTIES (set_tests_properties' NAME VALUE pairs, `|` between the words).
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
  list(LENGTH tests count)
  if(count EQUAL 0)
    continue()
  endif()
  math(EXPR parts "(${count} + ${MAX_TESTS} - 1) / ${MAX_TESTS}")
  # Even parts: 9 tests in groups of at most 8 are 5 and 4, not 8 and 1.
  math(EXPR per_part "(${count} + ${parts} - 1) / ${parts}")
  set(part 0)
  set(begin 0)
  while(begin LESS count)
    math(EXPR part "${part} + 1")
    if(parts EQUAL 1)
      set(name "${suite}")
      set(filter "${suite}.*")
    else()
      set(name "${suite}.part${part}of${parts}")
      list(SUBLIST tests ${begin} ${per_part} chunk)
      list(TRANSFORM chunk PREPEND "${suite}.")
      string(JOIN ":" filter ${chunk})
    endif()
    # Skipped, every one of its tests ("[  SKIPPED ] 4 tests, listed below:" of a group of 4; the
    # "] " before the count: 14 is not 4). A group with a test failed or passed is not.
    math(EXPR in_group "${count} - ${begin}")
    if(in_group GREATER per_part)
      set(in_group ${per_part})
    endif()
    set(skipped "\\[  SKIPPED \\] ${in_group} tests?, listed below")
    string(APPEND script
           "add_test([==[${name}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${filter}]==])\n"
           "set_tests_properties([==[${name}]==] PROPERTIES WORKING_DIRECTORY "
           "[==[${TEST_WORKING_DIR}]==] SKIP_REGULAR_EXPRESSION [==[${skipped}]==]")
    foreach(word IN LISTS properties)
      string(APPEND script " [==[${word}]==]")
    endforeach()
    string(APPEND script ")\n")
    math(EXPR begin "${begin} + ${per_part}")
  endwhile()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
