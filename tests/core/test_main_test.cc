// The test binaries' main (tests/test_main.cc): a temporary directory per process, gone at the end.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/process.h"

namespace slapo {
namespace {

namespace fs = std::filesystem;

TEST(TestMainTest, TheTemporaryDirectoryIsTheProcesssOwnForItAndItsChildren) {
  const std::string dir = ::testing::TempDir();
  EXPECT_NE(dir.find("/slapo-test-"), std::string::npos) << dir;
  EXPECT_TRUE(fs::is_directory(dir)) << dir;
  // What the process's children see (slapo-tune, workers, Python) and std::filesystem's.
  EXPECT_TRUE(fs::equivalent(std::getenv("TMPDIR"), dir)) << std::getenv("TMPDIR");
  EXPECT_TRUE(fs::equivalent(fs::temp_directory_path(), dir)) << fs::temp_directory_path();
  std::ofstream(dir + "/left-behind.txt") << "a file this test does not remove";
  fs::create_directories(dir + "/a/folder");
  std::ofstream(dir + "/a/folder/deeper.txt") << "nor this";
}

// This binary run again on the test above, in an empty directory of its own as TMPDIR: what the
// test left in its temporary directory is gone with it when the process ends.
TEST(TestMainTest, WhatATestLeavesIsRemovedWhenItsProcessEnds) {
  const fs::path parent = fs::path(::testing::TempDir()) / "parent";
  fs::create_directories(parent);
  ProcessOptions o;
  o.env["TMPDIR"] = parent.string();
  const ProcessResult r = run_process(
      {fs::read_symlink("/proc/self/exe").string(),
       "--gtest_filter=TestMainTest.TheTemporaryDirectoryIsTheProcesssOwnForItAndItsChildren"},
      o);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_empty(parent)) << (fs::directory_iterator(parent)->path());
}

}  // namespace
}  // namespace slapo
