// Property tests: hundreds of random small spaces, each checked against the brute-force oracle.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/rng.h"
#include "space/compiled_space.h"
#include "space/space_file.h"
#include "tests/space/brute_force.h"

namespace slapo::space {
namespace {

// A random space file: 1-4 scalar knobs of every kind, sometimes cut points, 0-4 constraints
// mixing affine ones (integer and fractional coefficients, strict, equalities, min/max) and
// guards (divisibility, products, or, if-then, in, !=).
class RandomSpace {
 public:
  explicit RandomSpace(uint64_t seed) : rng_(seed) {}

  std::string generate() {
    std::ostringstream knobs, constraints;
    const int scalar = 1 + pick(4);
    for (int i = 0; i < scalar; ++i) knobs << knob(i) << "\n";
    const bool with_cuts = pick(4) == 0;
    if (with_cuts) {
      const int layers = 4 + pick(5);
      std::string stages = std::to_string(1 + pick(3));
      if (!numeric_.empty() && pick(2) == 0) {
        knobs << "st = { values = [1, 2, 3] }\n";
        stages = "st";
      }
      knobs << "cuts = { layers = " << layers << ", stages = \"" << stages
            << "\", min = " << 1 + pick(2) << ", max = " << 2 + pick(4) << " }\n";
    }
    const int count = pick(5);
    for (int i = 0; i < count; ++i) constraints << "c" << i << " = \"" << constraint() << "\"\n";
    return "[knobs]\n" + knobs.str() + "[constraints]\n" + constraints.str();
  }

 private:
  int pick(int n) { return static_cast<int>(rng_.uniform(static_cast<uint64_t>(n))); }
  std::string num() { return std::to_string(pick(9) - 4); }
  std::string var() { return numeric_[pick(static_cast<int>(numeric_.size()))]; }
  std::string coef() {
    static const char* kCoefs[] = {"1", "2", "-1", "3", "0.5", "-2", "1.5"};
    return kCoefs[pick(7)];
  }

  std::string knob(int i) {
    const std::string name = "k" + std::to_string(i);
    std::ostringstream s;
    s << name << " = ";
    switch (pick(6)) {
      case 0:
        s << "{ range = [" << pick(7) - 3 << ", " << pick(7) + 3 << "], step = " << 1 + pick(3)
          << " }";
        numeric_.push_back(name);
        break;
      case 1:
        s << "{ values = [0.0, 0.25, 0.5, 0.75, 1.0] }";
        numeric_.push_back(name);
        break;
      case 2:
        s << "{ pow2 = [1, " << (1 << pick(5)) << "] }";
        numeric_.push_back(name);
        break;
      case 3:
        s << "{ values = [" << pick(3) << ", 3, 5, " << 6 + pick(3) << "] }";
        numeric_.push_back(name);
        break;
      case 4:
        s << "{ choice = ['a', 'b', 'c'] }";
        choices_.push_back(name);
        break;
      default:
        s << "{ values = [false, true] }";
        bools_.push_back(name);
        break;
    }
    return s.str();
  }

  std::string constraint() {
    if (numeric_.empty()) {
      if (!choices_.empty()) return choices_[0] + " != 'b'";
      return bools_[0] + " or not " + bools_[0];
    }
    switch (pick(15)) {
      case 12: return var() + " * " + var() + " == " + std::to_string(pick(9));
      case 13: return var() + " / (" + var() + " + 5) >= 0.3";
      case 14: return "(" + var() + " - 1) * " + var() + " + " + var() + " // 2 < " + num();
      case 0: return coef() + " * " + var() + " + " + coef() + " * " + var() + " <= " + num();
      case 1: return var() + " - " + var() + " >= " + num();
      case 2: return var() + " + " + var() + " < " + num();
      case 3: return var() + " == " + var() + " + " + num();
      case 4: return var() + " <= min(" + var() + " + 1, " + num() + ")";
      case 5: return var() + " % 2 == 0";
      case 6: return var() + " * " + var() + " <= " + num();
      case 7: return var() + " <= " + num() + " or " + var() + " >= 1";
      case 8:
        if (!choices_.empty()) return "if " + choices_[0] + " == 'a' then " + var() + " >= 0";
        return var() + " != " + num();
      case 9: return var() + " in [0, 1, 2, 4]";
      case 10: return "0.1 * " + var() + " + 0.2 * " + var() + " <= 0.3";
      default:
        if (!bools_.empty()) return "if " + bools_[0] + " then " + var() + " > " + num();
        return num() + " <= " + var() + " <= " + std::to_string(pick(6));
    }
  }

  Rng rng_;
  std::vector<std::string> numeric_, choices_, bools_;
};

TEST(PropertyTest, RandomSpacesMatchBruteForce) {
  int nonempty = 0, with_guards = 0, with_parametric = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    const std::string text = RandomSpace(seed).generate();
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + text);
    const CompiledSpace space = CompiledSpace::compile(parse_space(text, "random.toml"));
    const std::vector<Config> expected = testing::brute_force(space);
    ASSERT_EQ(space.size(), expected.size());

    // for_each visits exactly the brute-force set, in the same (index) order.
    std::vector<Config> visited;
    space.for_each([&](const PointView& p) { visited.push_back(p.to_config()); });
    ASSERT_EQ(visited, expected);

    // at() and index_of() are inverse bijections with 0..size-1.
    for (uint64_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(space.at(i), expected[i]) << "index " << i;
      ASSERT_EQ(space.index_of(expected[i]), i);
    }
    // Neighbours are valid and differ in exactly one knob (or in a knob and the cut points
    // re-balanced for it).
    for (const Config& c : expected) {
      for (const Config& n : space.neighbours(c)) {
        ASSERT_TRUE(space.contains(n).ok) << n.to_string();
        int differing = 0;
        for (const auto& [name, value] : c.entries()) {
          if (name != "cuts" && *n.find(name) != value) ++differing;
        }
        ASSERT_LE(differing, 1) << c.to_string() << " -> " << n.to_string();
        ASSERT_NE(n, c);
      }
      const std::vector<double> e = space.encode(c);
      ASSERT_EQ(e.size(), space.encoded_size());
      for (double x : e) ASSERT_TRUE(x >= 0 && x <= 1);
    }
    nonempty += expected.empty() ? 0 : 1;
    with_parametric +=
        space.describe().find("once the knobs before are fixed") != std::string::npos;
    with_guards += text.find('%') != std::string::npos || text.find(" or ") != std::string::npos;
  }
  // The generator must exercise what it claims to.
  EXPECT_GT(nonempty, 150);
  EXPECT_GT(with_guards, 50);
  EXPECT_GT(with_parametric, 25);
}

// Wilson–Hilferty approximation of the chi-square quantile at p = 0.999.
double chi_square_critical(double df) {
  const double z = 3.09;
  const double t = 1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df));
  return df * t * t * t;
}

TEST(PropertyTest, SampleIsUniform) {
  int tested = 0;
  for (uint64_t seed = 1; seed <= 60 && tested < 25; ++seed) {
    const CompiledSpace space =
        CompiledSpace::compile(parse_space(RandomSpace(seed).generate(), "random.toml"));
    const uint64_t size = space.size();
    if (size < 3 || size > 60) continue;
    ++tested;
    Rng rng(1234 + seed);
    const uint64_t draws = 200 * size;
    std::vector<uint64_t> counts(size, 0);
    for (uint64_t i = 0; i < draws; ++i) ++counts[space.index_of(space.sample(rng))];
    double chi = 0;
    const double expected = static_cast<double>(draws) / static_cast<double>(size);
    for (uint64_t c : counts) chi += (c - expected) * (c - expected) / expected;
    EXPECT_LT(chi, chi_square_critical(static_cast<double>(size - 1)))
        << "seed " << seed << ", size " << size;
  }
  EXPECT_GE(tested, 10);
}

TEST(PropertyTest, SampleOfSkewedSpaceIsUniform) {
  // A triangle: (x, y) with y <= x. Sampling x uniformly first would over-weight small x.
  const CompiledSpace space = CompiledSpace::compile(parse_space(
      "[knobs]\nx = { range = [0, 9] }\ny = { range = [0, 9] }\n[constraints]\nt = \"y <= x\"\n",
      "t.toml"));
  ASSERT_EQ(space.size(), 55u);
  Rng rng(7);
  std::map<int64_t, int> by_x;
  const int draws = 55000;
  for (int i = 0; i < draws; ++i) ++by_x[std::get<int64_t>(space.sample(rng).at("x"))];
  double chi = 0;
  for (int64_t x = 0; x <= 9; ++x) {
    const double expected = draws * (x + 1) / 55.0;
    chi += (by_x[x] - expected) * (by_x[x] - expected) / expected;
  }
  EXPECT_LT(chi, chi_square_critical(9));
}

}  // namespace
}  // namespace slapo::space
