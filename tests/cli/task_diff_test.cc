// What differs between two tasks' keys, in words (cli/task_diff.h).

#include <gtest/gtest.h>

#include "cli/task_diff.h"

namespace slapo::cli {
namespace {

db::TaskKey key(const std::string& workload, const std::string& fingerprint) {
  db::TaskKey k;
  k.workload_json = workload;
  k.space_hash = "s";
  k.fingerprint_json = fingerprint;
  return k;
}

TEST(TaskDiffTest, EachFieldThatDiffersIsOneLine) {
  const db::TaskKey a =
      key(R"({"model":"gpt-mini","threads":2})",
          R"({"cpu":"AMD EPYC","cores":2,"measuring_code":"abc","slapo":"0.1.0"})");
  EXPECT_TRUE(key_differences(a, a).empty());
  db::TaskKey b = key(R"({"model":"gpt-mini","threads":1})",
                      R"({"cpu":"Intel Xeon","cores":2,"measuring_code":"def","slapo":"0.1.0"})");
  b.world_size = 2;
  const std::vector<std::string> lines = key_differences(a, b);
  const std::vector<std::string> expected = {"threads: 2 → 1", "ranks: 1 → 2",
                                             "machine.cpu: \"AMD EPYC\" → \"Intel Xeon\"",
                                             "slapo.measuring_code: \"abc\" → \"def\""};
  EXPECT_EQ(lines, expected);
  // A fingerprint of before the measuring code: its whole revision is slapo's too.
  const db::TaskKey old = key(R"({"model":"gpt-mini","threads":2})",
                              R"({"cpu":"AMD EPYC","cores":2,"git":"123","slapo":"0.1.0"})");
  const std::vector<std::string> since = key_differences(old, a);
  const std::vector<std::string> expected_since = {"slapo.git: \"123\" → (absent)",
                                                   "slapo.measuring_code: (absent) → \"abc\""};
  EXPECT_EQ(since, expected_since);
}

}  // namespace
}  // namespace slapo::cli
