// The main of every test binary: GoogleTest's, in a temporary directory of the process's own that
// is removed when the tests end.
//
// The tests write databases, space files, reports and reference weights under
// ::testing::TempDir(), and the programs they start (slapo-tune, workers, the Python reference)
// under TMPDIR. GoogleTest's own main leaves all of it in /tmp: after a day of runs this machine's
// held 3,278 of the suite's files, 1.7 GB (an oversized-cell database of 80 MB a run among them).
// Here TEST_TMPDIR (what ::testing::TempDir() returns) and TMPDIR (std::filesystem's and the
// children's) both name one fresh directory per test process, and whatever is in it when the tests
// end goes with it — a test need not clean up after itself, and parallel test processes never
// share a file name. The tests of one process share it: a test of a binary run in groups
// (cmake/test_groups.cmake: up to 8 tests of a suite) finds what the tests before it in the group
// left, so it names its files for itself (the suite's tests do: each binary passes run whole).
// A test that crashes leaves its directory (slapo-test-XXXXXX) behind to look at.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/slapo-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror(("test main: cannot make a temporary directory " + pattern).c_str());
    return 2;
  }
  setenv("TEST_TMPDIR", pattern.c_str(), 1);
  setenv("TMPDIR", pattern.c_str(), 1);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  std::error_code ignored;
  std::filesystem::remove_all(pattern, ignored);
  return result;
}
