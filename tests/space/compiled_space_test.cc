#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "space/compiled_space.h"
#include "space/space_file.h"
#include "space/stage_splits.h"
#include "tests/space/brute_force.h"

namespace slapo::space {
namespace {

CompiledSpace compile_text(const std::string& text) {
  return CompiledSpace::compile(parse_space(text, "t.toml"));
}

// Cut points for `layers` layers into `stages` stages as scalar knobs c1..c{stages-1} with
// pairwise affine constraints.
std::string scalar_cuts(int layers, int stages, int lo, int hi) {
  std::string s = "[knobs]\n";
  for (int i = 1; i < stages; ++i)
    s += "c" + std::to_string(i) + " = { range = [1, " + std::to_string(layers - 1) + "] }\n";
  s += "[constraints]\n";
  s += "first = \"" + std::to_string(lo) + " <= c1 <= " + std::to_string(hi) + "\"\n";
  for (int i = 2; i < stages; ++i) {
    s += "gap" + std::to_string(i) + " = \"" + std::to_string(lo) + " <= c" + std::to_string(i) +
         " - c" + std::to_string(i - 1) + " <= " + std::to_string(hi) + "\"\n";
  }
  s += "last = \"" + std::to_string(lo) + " <= " + std::to_string(layers) + " - c" +
       std::to_string(stages - 1) + " <= " + std::to_string(hi) + "\"\n";
  return s;
}

TEST(CompiledSpaceTest, IssueExampleMatchesBruteForce) {
  const CompiledSpace space = CompiledSpace::compile(
      load_space_file(SLAPO_SOURCE_DIR "/examples/spaces/gpt-training.toml"));
  const std::vector<Config> expected = testing::brute_force(space);
  EXPECT_EQ(space.size(), expected.size());
  EXPECT_EQ(space.size(), 15120u);
  EXPECT_EQ(space.at(space.size() - 1), expected.back());
}

TEST(CompiledSpaceTest, ScalarCutPointsCountFastAndExactly) {
  // 15 scalar knobs with pairwise constraints: projection gives each cut bounds in the previous
  // one, and counting memoizes on it.
  const CompiledSpace space = compile_text(scalar_cuts(96, 16, 4, 8));
  EXPECT_EQ(space.size(), 10651488789u);
  const Config middle = space.at(5'000'000'000);
  EXPECT_EQ(space.index_of(middle), 5'000'000'000u);
  EXPECT_TRUE(space.contains(middle).ok);
  EXPECT_NE(space.describe().find("c2 >= c1 + 4   (gap2)"), std::string::npos) << space.describe();
  EXPECT_NE(space.describe().find("counts memoized on {c14}"), std::string::npos);
}

TEST(CompiledSpaceTest, ScalarAndArrayCutPointsAgree) {
  const CompiledSpace scalar = compile_text(scalar_cuts(48, 8, 4, 8));
  const CompiledSpace array =
      compile_text("[knobs]\ncuts = { layers = 48, stages = 8, min = 4, max = 8 }\n");
  ASSERT_EQ(scalar.size(), 38165u);
  ASSERT_EQ(array.size(), 38165u);
  for (uint64_t i : {uint64_t{0}, uint64_t{17}, uint64_t{38164}}) {
    const IntList cuts = std::get<IntList>(array.at(i).at("cuts"));
    const Config c = scalar.at(i);
    for (size_t j = 0; j < cuts.size(); ++j)
      EXPECT_EQ(std::get<int64_t>(c.at("c" + std::to_string(j + 1))), cuts[j]);
  }
}

// 12 layers cut into pp stages of 2 to 12 / pp + 1 layers, the cut knob declared before pp.
constexpr const char* kCutsByPp = R"(
[parameters]
layers = 12
[knobs]
cuts = { layers = "layers", stages = "pp", min = 2, max = "layers // pp + 1" }
pp = { values = [1, 2, 3, 4] }
)";

TEST(CompiledSpaceTest, CutFamiliesWalkTheOtherKnobsWithTheirSplits) {
  const CompiledSpace space = compile_text(std::string(kCutsByPp) +
                                           "m = { values = [1, 2] }\n"
                                           "[constraints]\nenough = \"m <= pp\"\n");
  EXPECT_EQ(space.cut_knob(), "cuts");
  // Every family is a configuration of pp and m (no cuts) with the splits its pp allows; their
  // counts add up to the space.
  uint64_t total = 0, families = 0;
  space.for_each_cut_family([&](const Config& c, const StageSplits& splits) {
    EXPECT_EQ(c.find("cuts"), nullptr);
    const int64_t pp = std::get<int64_t>(*c.find("pp"));
    EXPECT_LE(std::get<int64_t>(*c.find("m")), pp);
    EXPECT_EQ(splits.stages(), pp);
    EXPECT_EQ(splits.max_len(), std::min<int64_t>(12, 12 / pp + 1));  // at most the layers
    total += splits.count();
    ++families;
    return true;
  });
  EXPECT_EQ(families, 7u);  // pp 1: m 1; pp 2-4: m 1, 2
  EXPECT_EQ(total, space.size());
  EXPECT_EQ(compile_text("[knobs]\nx = { values = [1] }\n").cut_knob(), "");
  EXPECT_THROW(compile_text(R"(
[knobs]
a = { layers = 8, stages = 2 }
b = { layers = 8, stages = 2 }
)")
                   .cut_knob(),
               Error);
}

TEST(CompiledSpaceTest, CutPointsFollowAStageKnob) {
  const CompiledSpace space = compile_text(kCutsByPp);
  // The cut points were declared first but depend on pp: the loop order puts them after it.
  EXPECT_EQ(space.knobs()[0].name, "pp");
  uint64_t expected = 0;
  for (int64_t pp : {1, 2, 3, 4}) expected += StageSplits(12, pp, 2, 12 / pp + 1).count();
  EXPECT_EQ(space.size(), expected);
  // Changing pp re-balances the cut points, so pp has neighbours.
  Config c;
  c.set("pp", int64_t{2});
  c.set("cuts", IntList{6});
  std::set<std::string> seen;
  for (const Config& n : space.neighbours(c)) seen.insert(n.to_string());
  EXPECT_TRUE(seen.count("pp=3 cuts=4,8")) << *seen.begin();
  EXPECT_TRUE(seen.count("pp=1 cuts="));
  EXPECT_TRUE(seen.count("pp=2 cuts=5"));
  EXPECT_TRUE(seen.count("pp=2 cuts=7"));
  EXPECT_EQ(space.encoded_size(), 1u + 3u);  // pp, and up to 3 cuts
}

TEST(CompiledSpaceTest, ContainsExplainsWhy) {
  const CompiledSpace space = compile_text(R"(
[knobs]
tp = { values = [1, 2, 4, 8] }
attn = { choice = ["naive", "fused"] }
[constraints]
fits = "tp <= 4"
)");
  auto reason = [&](const std::string& json) {
    return space.contains(Config::from_json(json)).reason;
  };
  EXPECT_EQ(reason(R"({"tp": 2, "attn": "fused"})"), "");
  EXPECT_EQ(reason(R"({"tp": 8, "attn": "fused"})"),
            "violates constraint 'fits' (tp <= 4) at t.toml:6:9");
  EXPECT_EQ(reason(R"({"tp": 3, "attn": "fused"})"), "knob 'tp': 3 is not in its domain");
  EXPECT_EQ(reason(R"({"tp": 2})"), "missing knob 'attn'");
  EXPECT_EQ(reason(R"({"tp": 2, "attn": "fused", "pp": 1})"), "unknown knob 'pp'");
  EXPECT_EQ(reason(R"({"tp": 2, "attn": "flash"})"),
            "knob 'attn': 'flash' is not one of its choices");
  EXPECT_EQ(reason(R"({"tp": "2", "attn": "fused"})"),
            "knob 'tp': expected a number, found the string \"2\"");
  EXPECT_TRUE(space.contains(Config::from_json(R"({"tp": 2.0, "attn": "fused"})")).ok);
}

TEST(CompiledSpaceTest, NeighboursSkipInvalidValuesToTheNearestValidOne) {
  const CompiledSpace space = compile_text(R"(
[knobs]
tp = { values = [1, 2, 4, 8, 16] }
mode = { choice = ["a", "b", "c"] }
[constraints]
no_four = "tp != 4"
no_b = "mode != 'b'"
)");
  std::set<std::string> seen;
  for (const Config& n : space.neighbours(Config::from_json(R"({"tp": 2, "mode": "a"})")))
    seen.insert(n.to_string());
  EXPECT_EQ(seen, (std::set<std::string>{"tp=1 mode=a", "tp=8 mode=a", "tp=2 mode=c"}));
}

TEST(CompiledSpaceTest, EncodeIntoTheUnitCube) {
  const CompiledSpace space = compile_text(R"(
[knobs]
bs = { range = [8, 32], step = 8 }
flag = { values = [false, true] }
attn = { choice = ["a", "b", "c"] }
one = { values = [7] }
)");
  EXPECT_EQ(space.encoded_size(), 1u + 1u + 3u + 1u);
  EXPECT_EQ(space.encode(Config::from_json(R"({"bs": 16, "flag": true, "attn": "c", "one": 7})")),
            (std::vector<double>{1.0 / 3.0, 1, 0, 0, 1, 0.5}));
}

TEST(CompiledSpaceTest, LoopOrderOverrideKeepsTheSet) {
  const std::string body =
      "x = { range = [0, 5] }\ny = { range = [0, 5] }\n[constraints]\nc = \"x + 2 * y <= 7\"\n";
  const CompiledSpace a = compile_text("[knobs]\n" + body);
  const CompiledSpace b = compile_text("[space]\norder = ['y', 'x']\n[knobs]\n" + body);
  EXPECT_EQ(b.knobs()[0].name, "y");
  EXPECT_EQ(a.size(), b.size());
  std::set<std::string> sa, sb;
  a.for_each([&](const PointView& p) { sa.insert(p.to_config().canonical_json()); });
  b.for_each([&](const PointView& p) { sb.insert(p.to_config().canonical_json()); });
  EXPECT_EQ(sa, sb);
}

TEST(CompiledSpaceTest, FloatingBoundsFollowTheConstraintExactly) {
  // 0.1 + 0.2 > 0.3 in binary floating point: the space agrees with evaluating the constraint.
  const CompiledSpace space = compile_text(R"(
[knobs]
a = { values = [0.1, 0.2] }
b = { values = [0.1, 0.2] }
[constraints]
c = "a + b <= 0.3"
)");
  EXPECT_EQ(space.size(), testing::brute_force(space).size());
  EXPECT_EQ(space.size(), 1u);  // only 0.1 + 0.1
}

TEST(CompiledSpaceTest, EmptySpaces) {
  const CompiledSpace constant = compile_text(
      "[parameters]\nn = 2\n[knobs]\nx = { range = [1, 4] }\n[constraints]\nc = \"n > 3\"\n");
  EXPECT_EQ(constant.size(), 0u);
  EXPECT_NE(constant.describe().find("empty: constraint 'c' (n > 3) is false for these parameters"),
            std::string::npos);
  Rng rng(1);
  EXPECT_THROW(constant.sample(rng), Error);
  const CompiledSpace infeasible = compile_text(
      "[knobs]\nx = { range = [1, 4] }\ny = { range = [1, 4] }\n[constraints]\nc = \"x + y >= 9\"\n");
  EXPECT_EQ(infeasible.size(), 0u);
  int visits = 0;
  infeasible.for_each([&](const PointView&) { ++visits; });
  EXPECT_EQ(visits, 0);
}

TEST(CompiledSpaceTest, SizeOverflowIsAnErrorNotAWrap) {
  std::string text = "[knobs]\n";
  for (int i = 0; i < 8; ++i) text += "k" + std::to_string(i) + " = { range = [1, 1000000] }\n";
  const CompiledSpace space = compile_text(text);
  try {
    space.size();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
  }
  EXPECT_NE(space.describe().find("more than 2^64"), std::string::npos);
}

TEST(CompiledSpaceTest, AtOutOfRange) {
  const CompiledSpace space = compile_text("[knobs]\nx = { range = [1, 4] }\n");
  EXPECT_EQ(space.at(3).to_string(), "x=4");
  EXPECT_THROW(space.at(4), Error);
}

TEST(CompiledSpaceTest, ForEachStopsWhenAskedTo) {
  const CompiledSpace space =
      compile_text("[knobs]\nx = { range = [1, 100] }\ny = { range = [1, 100] }\n");
  int visits = 0;
  space.for_each([&](const PointView&) { return ++visits < 10; });
  EXPECT_EQ(visits, 10);
}

}  // namespace
}  // namespace slapo::space
