#include <gtest/gtest.h>

#include "core/error.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace slapo::space {
namespace {

std::string load_error(const std::string& text) {
  try {
    CompiledSpace::compile(parse_space(text, "s.toml"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SpaceFileTest, ReadsEveryKindOfKnobInFileOrder) {
  const Space s = parse_space(R"(
[workload]
model = "gpt-mini"
seq_len = 128
[parameters]
num_layers = 12
[knobs]
zeta  = { range = [1, "num_layers - 1"], mem = "up" }
alpha = { pow2 = [1, 16] }
mid   = { values = [0.0, 0.5] , mem = "down" }
flag  = { values = [false, true] }
attn  = { choice = ["naive", "fused"] }
[knobs.pp]
values = [1, 2]
[constraints]
one = "zeta >= 2"
)",
                              "s.toml");
  ASSERT_EQ(s.knobs.size(), 6u);
  const std::vector<std::string> names = {"zeta", "alpha", "mid", "flag", "attn", "pp"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(s.knobs[i].name, names[i]);
  EXPECT_EQ(s.knobs[0].kind, KnobKind::kRange);
  EXPECT_EQ(s.knobs[0].hi, "num_layers - 1");
  EXPECT_EQ(s.knobs[0].mem, MemTrend::kUp);
  EXPECT_EQ(s.knobs[1].kind, KnobKind::kPow2);
  EXPECT_EQ(s.knobs[2].mem, MemTrend::kDown);
  EXPECT_EQ(s.knobs[3].kind, KnobKind::kBool);
  EXPECT_EQ(s.knobs[4].kind, KnobKind::kChoice);
  EXPECT_EQ(s.workload_json, R"({"model":"gpt-mini","seq_len":128})");
  EXPECT_EQ(s.constraints[0].where.to_string(), "s.toml:16:8");
  const CompiledSpace c = CompiledSpace::compile(s);
  EXPECT_EQ(c.size(), 10u * 5 * 2 * 2 * 2 * 2);
}

TEST(SpaceFileTest, DirectoriesAndEndlessFilesAreRefusedWithoutReadingThemWhole) {
  const auto message = [](const std::string& path) {
    try {
      load_space_file(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message("/tmp"), "/tmp: a directory where the space file was expected");
  EXPECT_EQ(message("/dev/zero"),
            "/dev/zero: larger than 16 MiB; a space file is a few kilobytes of TOML");
}

TEST(SpaceFileTest, CutPointsWithoutMinAndMaxUseTheDefaults) {
  // min defaults to 1 layer per stage and max to all of them.
  const CompiledSpace c = CompiledSpace::compile(parse_space(R"(
[knobs]
pp   = { values = [1, 2, 3] }
cuts = { layers = 4, stages = "pp" }
)",
                                                             "s.toml"));
  // pp=1: one way; pp=2: 3 cut positions; pp=3: C(3, 2) = 3.
  EXPECT_EQ(c.size(), 1u + 3 + 3);
}

TEST(SpaceFileTest, ConstraintGroupsNameEachMember) {
  const CompiledSpace c = CompiledSpace::compile(parse_space(R"(
[knobs]
x = { range = [1, 8] }
[constraints]
divides = ["8 % x == 0", "x != 8"]
)",
                                                             "s.toml"));
  EXPECT_EQ(c.size(), 3u);  // 1, 2, 4
  Config bad;
  bad.set("x", int64_t{8});
  EXPECT_EQ(c.contains(bad).constraint, "divides[1]");
  EXPECT_NE(c.contains(bad).reason.find("s.toml:5:27"), std::string::npos)
      << c.contains(bad).reason;
}

TEST(SpaceFileTest, ErrorsNameFileLineColumnAndWhat) {
  EXPECT_EQ(
      load_error("[knobs]\nx = { range = [1, 8] }\n[constraints]\nc = \"x <= (2\"\n"),
      "s.toml:4:13: constraint 'c': expected ')' to close '(', found the end of the expression");
  EXPECT_EQ(load_error("[knobs]\nx = { range = [1, 8] }\n[constraints]\nc = \"x <= banana\"\n"),
            "s.toml:4:11: constraint 'c': unknown name 'banana' (not a knob or parameter)");
  EXPECT_EQ(load_error("[knobs]\nx = { range = [1, 8], stpe = 2 }\n"),
            "s.toml:2:30: knob 'x': unknown key 'stpe' (did you mean 'step'?)");
  EXPECT_EQ(load_error("[knob]\nx = { range = [1, 8] }\n"),
            "s.toml:1:1: unknown table [knob] (did you mean [knobs]?)");
  EXPECT_NE(load_error("[knobs]\nx = { range = [1, 8]\n").find("s.toml:2:"), std::string::npos);
  EXPECT_EQ(load_error("[knobs]\nx = { range = [8, 1] }\n"),
            "s.toml:2:5: knob 'x': empty range [8, 1]");
  EXPECT_EQ(
      load_error("[knobs]\nx = { range = [1, 8], values = [1] }\n"),
      "s.toml:2:5: knob 'x': give exactly one of range, pow2, values, choice, or stages (cut points)");
  EXPECT_EQ(load_error("[knobs]\nx = { values = [1, 2, 1] }\n"),
            "s.toml:2:5: knob 'x': value 1 is listed twice");
  EXPECT_EQ(load_error("[knobs]\nx = { values = ['a'] }\n"),
            "s.toml:2:17: knob 'x': values must be numbers; use choice = [...] for strings");
  EXPECT_EQ(load_error("[knobs]\nx = { range = [1, 8], mem = 'sideways' }\n"),
            "s.toml:2:29: knob 'x': mem must be \"up\" or \"down\"");
  EXPECT_EQ(
      load_error("[knobs]\nx = 3\n"),
      "s.toml:2:5: knob 'x': expected a table such as { range = [1, 8] } or { values = [1, 2, 4] }");
  EXPECT_EQ(load_error("[parameters]\nn = 4\n[knobs]\nn = { range = [1, 8] }\n"),
            "s.toml:4:5: knob 'n': the name is already a parameter or another knob");
  EXPECT_EQ(load_error("[knobs]\nand = { range = [1, 8] }\n"),
            "s.toml:2:7: knob 'and': not a valid name (letters, digits and _, not a keyword)");
  EXPECT_EQ(
      load_error("[knobs]\nx = { range = [1, 8] }\ny = { range = [1, 'x'] }\n"),
      "s.toml:3:5: knob 'y': upper bound 'x': expected an expression of parameters only, not of knobs");
  EXPECT_EQ(load_error("[knobs]\nx = { range = [1, 8] }\n[constraints]\nc = \"x + 1\"\n"),
            "s.toml:4:6: constraint 'c': expected a condition (a comparison, 'and', 'or', 'not' or "
            "'if ... then ...'), found a number");
  EXPECT_EQ(load_error("[knobs]\nx = { range = [1, 8] }\n[space]\norder = ['x', 'z']\n"),
            "s.toml: order: 'z' is not a knob");
  EXPECT_EQ(load_error("[knobs]\nx = { choice = ['a', \"b\\u0000c\"] }\n"),
            "s.toml:2:22: knob 'x': a choice may not contain a NUL character");
  EXPECT_EQ(
      load_error("[knobs]\nx = { range = [0, 1000000000000000000] }\n"),
      "s.toml:2:5: knob 'x': an integer range must lie within ±10^15 (got [0, 1e+18]); values "
      "past that are not exact");
}

// Limits that bound what a space file can cost: counted before compiling.
TEST(SpaceFileTest, TooManyKnobsAreRefusedInOneLine) {
  std::string text = "[knobs]\n";
  for (size_t i = 0; i <= kMaxKnobs; ++i) text += "k" + std::to_string(i) + " = { values = [1] }\n";
  EXPECT_EQ(load_error(text), "s.toml: 100001 knobs; a space may have at most 100000");
}

TEST(SpaceFileTest, ParameterOverrides) {
  Space s = parse_space(
      "[parameters]\nnum_layers = 24\nname = 'gpt'\n[knobs]\nx = { range = [1, 'num_layers'] }\n",
      "s.toml");
  s.set_parameter("num_layers=4");
  EXPECT_EQ(CompiledSpace::compile(s).size(), 4u);
  auto error = [&](const std::string& assignment) {
    try {
      s.set_parameter(assignment);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("num_layer=4"),
            "parameter num_layer: s.toml declares no such parameter (did you mean 'num_layers'?)");
  EXPECT_EQ(error("num_layers"), "parameter assignment 'num_layers': expected NAME=VALUE");
  EXPECT_EQ(error("num_layers=deep"),
            "parameter num_layers: 'deep' is not of the type of its value 4 in s.toml:2:14");
  EXPECT_EQ(error("name=bert"), "");
}

TEST(SpaceFileTest, FingerprintFollowsWhatDefinesTheConfigurations) {
  const std::string text =
      "[workload]\nmodel = 'a'\n[parameters]\nn = 4\n[knobs]\nx = { range = [1, 'n'] }\n";
  Space a = parse_space(text, "a.toml");
  const Space b = parse_space(text, "b.toml");
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.fingerprint().size(), 16u);
  // The workload is not part of the space.
  const Space c =
      parse_space("[workload]\nmodel = 'b'\n" + text.substr(text.find("[parameters]")), "c.toml");
  EXPECT_EQ(a.fingerprint(), c.fingerprint());
  a.set_parameter("n=5");
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  const Space d = parse_space(text + "[constraints]\nc = 'x > 1'\n", "d.toml");
  EXPECT_NE(d.fingerprint(), b.fingerprint());
}

TEST(SpaceFileTest, MissingFileIsNotFound) {
  try {
    load_space_file("/nonexistent/space.toml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_EQ(std::string(e.what()), "/nonexistent/space.toml: cannot open the space file");
  }
}

}  // namespace
}  // namespace slapo::space
