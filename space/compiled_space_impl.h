#pragma once
// The compiled space's insides, shared by the compiler (space_compiler.cc), the nest walk
// (nest_walk.cc), the public interface (compiled_space.cc) and describe (describe.cc). Not a
// public header: nothing outside space/ includes it.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "space/affine.h"
#include "space/compiled_space.h"
#include "space/program.h"
#include "space/projection.h"
#include "space/stage_splits.h"

namespace slapo::space {

namespace detail {

inline constexpr int64_t kMaxMaterialized =
    10'000'000;                              // largest explicit domain (float ranges, lists)
inline constexpr int kNeighbourSearch = 64;  // how far neighbours() looks past invalid values

inline int64_t floor_div_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t ceil_div_i(int64_t a, int64_t b) { return -floor_div_i(-a, b); }

inline uint64_t checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  SLAPO_CHECK(!__builtin_add_overflow(a, b, &r), ErrorCode::kOutOfRange,
              "the space has more than 2^64 - 1 configurations");
  return r;
}
inline uint64_t checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  SLAPO_CHECK(!__builtin_mul_overflow(a, b, &r), ErrorCode::kOutOfRange,
              "the space has more than 2^64 - 1 configurations");
  return r;
}

// A scalar knob's values in index order.
struct Domain {
  bool arithmetic = false;  // integers base + i·step (no materialized list)
  int64_t base = 0, step = 1;
  int64_t n = 0;
  std::vector<double> values;  // when !arithmetic: ascending (choices: 0..n-1)
  bool integer = false;        // every value is an integer

  double value(int64_t i) const {
    return arithmetic ? static_cast<double>(base + i * step) : values[static_cast<size_t>(i)];
  }
  // First index whose value is ≥ v (n when none).
  int64_t first_at_least(double v) const {
    if (arithmetic) {
      if (v <= static_cast<double>(base)) return 0;
      const double rel = std::ceil((v - static_cast<double>(base)) / static_cast<double>(step));
      return rel >= static_cast<double>(n) ? n : static_cast<int64_t>(rel);
    }
    return std::lower_bound(values.begin(), values.end(), v) - values.begin();
  }
  // Last index whose value is ≤ v (-1 when none).
  int64_t last_at_most(double v) const {
    if (arithmetic) {
      if (v < static_cast<double>(base)) return -1;
      const double rel = std::floor((v - static_cast<double>(base)) / static_cast<double>(step));
      return rel >= static_cast<double>(n - 1) ? n - 1 : static_cast<int64_t>(rel);
    }
    return (std::upper_bound(values.begin(), values.end(), v) - values.begin()) - 1;
  }
  // Integer bounds, exact.
  int64_t first_at_least(int64_t v) const {
    if (!arithmetic) return first_at_least(static_cast<double>(v));
    if (v <= base) return 0;
    return std::min(n, ceil_div_i(v - base, step));
  }
  int64_t last_at_most(int64_t v) const {
    if (!arithmetic) return last_at_most(static_cast<double>(v));
    if (v < base) return -1;
    return std::min(n - 1, floor_div_i(v - base, step));
  }
  // The index of `v`, or -1.
  int64_t find(double v) const {
    const int64_t i = first_at_least(v);
    return (i < n && value(i) == v) ? i : -1;
  }
};

// x_level ≥ (lower) or ≤ (upper) -(c + Σ terms) / a.
struct Bound {
  std::vector<std::pair<int, double>> terms;  // earlier slots only
  double a = 1;
  double c = 0;
  bool exact = false;
  bool lower = true;
  int origin = Row::kProjected;
};

struct ConstraintInfo {
  std::string name;
  std::string text;
  SourceLocation where;
};

struct Part {
  int constraint = 0;
  Program program;
  bool affine = false;
  std::string text;  // the bound conjunct, printed
};

// A guard affine in its level's knob once the knobs before are fixed: coef·x + rest ≥ 0
// (> 0, == 0), with coef and rest evaluated per prefix. See parametric_in() in affine.h.
struct ParametricBound {
  Program coef;
  Program rest;  // empty: zero
  bool equality = false;
  int part = 0;
};

struct KeyHash {
  size_t operator()(const std::vector<double>& key) const {
    uint64_t h = 14695981039346656037ULL;
    for (double d : key) {
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      h = (h ^ bits) * 1099511628211ULL;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct Level {
  KnobInfo info;
  KnobDecl decl;
  bool is_cuts = false;
  bool output_int = false;  // Config values as int64 (else double); numeric knobs only
  Domain domain;
  std::vector<Bound> bounds;
  std::vector<int> guards;  // non-affine parts checked here
  std::vector<ParametricBound> parametric;
  // Parts whose bounds are not exact (floating rows, parametric bounds): re-checked at the ends
  // of the range.
  std::vector<int> tighten;
  Program layers, stages, min_len, max_len;  // cuts
  size_t cut_dims = 0;                       // cuts: max number of cut points (for encode)
  std::vector<int> deps;      // slots < this level read by this level or any later one
  bool memoize = false;       // deps are fewer than the levels before: counts repeat
  bool next_reads_me = true;  // the levels after read this knob's value
  mutable std::unordered_map<std::vector<double>, uint64_t, KeyHash> memo;
};

}  // namespace detail

// A configuration unpacked for the nest: slot values, domain indices, cut points.
struct Point {
  explicit Point(size_t n) : slots(n + 1, 0), index(n + 1, 0), cuts(n + 1) {}
  std::vector<double> slots;
  std::vector<int64_t> index;
  std::vector<IntList> cuts;
};

// The compiled space: levels of the loop nest (one per knob, in loop order), the constraints and
// their parts, and the walk over the nest that counting, ranking, unranking and enumeration share.
struct CompiledSpace::Impl {
  Space space;
  std::vector<KnobInfo> knobs;
  std::vector<detail::Level> levels;
  std::vector<detail::ConstraintInfo> constraints;
  std::vector<detail::Part> parts;
  bool empty = false;
  std::string empty_reason;
  bool projection_truncated = false;
  mutable std::map<std::array<int64_t, 4>, std::unique_ptr<StageSplits>> splits_cache;
  mutable bool size_known = false;
  mutable uint64_t size_value = 0;

  size_t n() const { return levels.size(); }

  [[noreturn]] void fail_expression(const ExpressionError& e, const SourceLocation& where,
                                    const std::string& what) const {
    SLAPO_FAIL(ErrorCode::kParse, where.shifted(e.offset()).to_string(), ": ", what, ": ",
               e.what());
  }

  // ---- the nest walk (nest_walk.cc) -------------------------------------------------------------
  // The splits of cut-point level k for the prefix in `slots` (cached per layers, stages, bounds).
  const StageSplits& splits(size_t k, const double* slots) const;
  bool guards_hold(const detail::Level& level, const double* slots) const;
  bool tighten_holds(const detail::Level& level, const double* slots) const;
  // The index range [*a, *b] of scalar level k allowed by its bounds, given slots < k.
  bool range(size_t k, double* slots, int64_t* a, int64_t* b) const;

  // One walk over the values of scalar level k in [a, stop) whose guards hold, adding up the
  // configurations below each (the count of levels k+1..). It is what counting (all values),
  // ranking (the values before the target's) and unranking (until `budget` configurations are
  // passed) share, so a fix to the nest is made once. When the levels below do not read level k,
  // the count below is the same for every value and is computed once.
  struct Walk {
    uint64_t before = 0;  // configurations below the values passed
    int64_t at = -1;      // with a budget: the value index whose sub-nest holds configuration
                          // number `budget` (then `before` counts those ahead of it); -1 if none
  };
  Walk walk_level(size_t k, double* slots, int64_t a, int64_t stop, const uint64_t* budget) const;

  // The number of configurations of levels k.. for the prefix in `slots` (memoized on the
  // prefix's values the nest below reads).
  uint64_t count_from(size_t k, double* slots) const;
  // Visits every configuration from level k on; false when the visitor stopped it.
  bool enumerate(size_t k, double* slots, int64_t* index, IntList* cuts, const PointView& view,
                 void* visit, bool (*call)(void*, const PointView&)) const;

  // ---- configurations <-> slots -----------------------------------------------------------------
  Value value_of(size_t k, const double* slots, const IntList* cuts) const;
  Config make_config(const double* slots, const IntList* cuts) const;
  // Reads a configuration into slots/indices/cuts. Returns "" or why it is not in the domains.
  std::string read_config(const Config& config, double* slots, int64_t* index, IntList* cuts) const;
  std::string read(const Config& config, Point* p) const {
    return read_config(config, p->slots.data(), p->index.data(), p->cuts.data());
  }
  // Checks constraints and cut points of a point read by read_config.
  Validity check(const double* slots, const IntList* cuts) const;
};

}  // namespace slapo::space
