// Smoke tests of the slapo-tune binary: output, formats and exit codes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::write_temp;

const std::string kExample = std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/gpt-training.toml";

TEST(CliTest, HelpAndVersion) {
  Outcome help = run("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("commands:"), std::string::npos);
  EXPECT_NE(help.out.find("space"), std::string::npos);
  EXPECT_EQ(run("").exit_code, 2);
  Outcome unknown = run("frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate'"), std::string::npos);
  Outcome version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("libtorch 1.13"), std::string::npos);
  EXPECT_NE(version.out.find("blas "), std::string::npos);
  Outcome space_help = run("space --help");
  EXPECT_EQ(space_help.exit_code, 0);
  EXPECT_NE(space_help.out.find("usage: slapo-tune space ACTION FILE"), std::string::npos);
}

// A misspelt SLAPO_HEAP would leave the heap kept without a word: refused, named, exit 2.
TEST(SpaceCliTest, AnUnknownHeapChoiceIsRefused) {
  setenv("SLAPO_HEAP", "sytem", 1);
  Outcome bad = run("--version");
  setenv("SLAPO_HEAP", "system", 1);
  Outcome system = run("--version");
  unsetenv("SLAPO_HEAP");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("SLAPO_HEAP=sytem"), std::string::npos) << bad.err;
  EXPECT_EQ(system.exit_code, 0) << system.err;
  EXPECT_NE(system.out.find("heap system"), std::string::npos) << system.out;
}

// SLAPO_AVAILABLE_MEMORY that is not a size is refused before anything runs, in one line naming
// it, exit 2 — not mid-run, by a trial's worker or the profile.
TEST(SpaceCliTest, AnAvailableMemoryThatIsNotASizeIsRefused) {
  setenv("SLAPO_AVAILABLE_MEMORY", "lots", 1);
  Outcome bad = run("space count " + kExample);
  setenv("SLAPO_AVAILABLE_MEMORY", "8GiB", 1);
  Outcome good = run("space count " + kExample);
  unsetenv("SLAPO_AVAILABLE_MEMORY");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "slapo-tune: error: SLAPO_AVAILABLE_MEMORY: 'lots' is not a size such as "
            "512MiB or 2GiB\n");
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

TEST(CliTest, CountPrintsTheNumberAloneOnTheLastLine) {
  Outcome r = run("space count " + kExample);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(last_line(r.out), "15120");
  Outcome smaller = run("space count " + kExample + " --param world_size=4 --param num_layers=12");
  EXPECT_EQ(smaller.exit_code, 0) << smaller.err;
  EXPECT_NE(last_line(smaller.out), "15120");
  EXPECT_GT(std::stoll(last_line(smaller.out)), 0);
}

TEST(CliTest, ShowDescribesTheAnalysis) {
  Outcome r = run("space show " + kExample);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("loop order (6 knobs"), std::string::npos);
  EXPECT_NE(r.out.find("guard  8 % (tp * pp) == 0   (divides[0])"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("bound  tp * pp <= 8   (fits; solved for pp once the knobs before are fixed)"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("size: 15120"), std::string::npos);
}

TEST(CliTest, ListFormats) {
  Outcome json = run("space list " + kExample + " --limit 3 --format json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0]["attn"], "naive");
  EXPECT_TRUE(parsed[0]["batch_size"].is_number_integer());
  Outcome csv = run("space list " + kExample + " --limit 2 --offset 5 --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(header, "index,batch_size,ckpt_ratio,tp,pp,attn,cut1");
  EXPECT_EQ(first.substr(0, 2), "5,");
  EXPECT_EQ(second.substr(0, 2), "6,");
  Outcome table = run("space list " + kExample + " --limit 2");
  EXPECT_NE(table.out.find("... 15118 more"), std::string::npos);
}

TEST(CliTest, SampleIsReproducibleBySeed) {
  Outcome a = run("space sample " + kExample + " --n 5 --seed 3 --format csv");
  Outcome b = run("space sample " + kExample + " --n 5 --seed 3 --format csv");
  Outcome c = run("space sample " + kExample + " --n 5 --seed 4 --format csv");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  EXPECT_EQ(std::count(a.out.begin(), a.out.end(), '\n'), 6);
}

TEST(CliTest, BadInputExitsWithTwoAndOneLine) {
  Outcome missing = run("space count /nonexistent.toml");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "slapo-tune: error: /nonexistent.toml: cannot open the space file\n");
  const std::string bad =
      write_temp("bad.toml", "[knobs]\nx = { range = [1, 8] }\n[constraints]\nc = \"x <= (2\"\n");
  Outcome parse = run("space count " + bad);
  EXPECT_EQ(parse.exit_code, 2);
  EXPECT_NE(parse.err.find("bad.toml:4:13: constraint 'c': expected ')'"), std::string::npos)
      << parse.err;
  EXPECT_EQ(std::count(parse.err.begin(), parse.err.end(), '\n'), 1);
  EXPECT_EQ(run("space frobnicate " + kExample).exit_code, 2);
  EXPECT_EQ(run("space count").exit_code, 2);
  Outcome flag = run("space count " + kExample + " --bogus");
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("bogus"), std::string::npos);
  Outcome param = run("space count " + kExample + " --param nope=1");
  EXPECT_EQ(param.exit_code, 2);
  EXPECT_NE(param.err.find("--param nope"), std::string::npos);
  EXPECT_EQ(run("space list " + kExample + " --format xml").exit_code, 2);
}

TEST(CliTest, EveryExampleSpaceLoads) {
  const std::string dir = std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/";
  int seen = 0;
  for (const char* name :
       {"gpt-training.toml", "pipeline-cuts.toml", "training-64.toml", "python-gpt.toml"}) {
    Outcome r = run("space count " + dir + name);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_GT(std::stoll(last_line(r.out)), 0) << name;
    ++seen;
  }
  EXPECT_EQ(last_line(run("space count " + dir + "training-64.toml").out), "1557");
  EXPECT_EQ(last_line(run("space count " + dir + "pipeline-cuts.toml").out), "114500");
  EXPECT_EQ(seen, 4);
}

TEST(CliTest, SampleOfAnEmptySpaceFails) {
  const std::string empty =
      write_temp("empty.toml", "[knobs]\nx = { range = [1, 4] }\n[constraints]\nc = \"x > 9\"\n");
  EXPECT_EQ(last_line(run("space count " + empty).out), "0");
  Outcome r = run("space sample " + empty);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the space is empty"), std::string::npos);
}

}  // namespace
