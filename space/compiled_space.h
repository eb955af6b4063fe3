#pragma once
// CompiledSpace: a search space analysed into a loop nest, one level per knob.
//
// Affine constraints are projected by Fourier–Motzkin elimination so each knob gets bounds affine
// in the knobs before it; the other constraints (guards) are checked at the first level where all
// their knobs are bound. On top of that nest:
//   size()                exact count, memoized on the few earlier knobs the later levels read
//   for_each(visit)       every configuration, in index order, without allocating
//   at(i) / index_of(c)   a bijection with 0 .. size()-1
//   sample(rng)           exactly uniform
//   neighbours(c)         valid configurations one step away in one knob
//   contains(c)           validity, naming the violated constraint
//   encode(c)             a point of the unit cube, for model-based search
//
// Not thread-safe: counting fills caches. Use one CompiledSpace per thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/config.h"
#include "core/rng.h"
#include "space/space.h"
#include "space/stage_splits.h"

namespace slapo::space {

struct Validity {
  bool ok = true;
  std::string reason;      // one line: which knob or constraint, and why
  std::string constraint;  // the violated constraint's name, when one is violated
};

struct KnobInfo {
  std::string name;
  KnobKind kind = KnobKind::kRange;
  MemTrend mem = MemTrend::kNone;
  // Scalar knobs: the domain in index order (ascending numbers; choices in file order).
  // Empty for kCuts, whose domain depends on the knobs before it.
  std::vector<Value> domain;
};

class CompiledSpace;

// The configuration being visited by for_each. Valid only during the callback.
class PointView {
 public:
  size_t num_knobs() const;
  // Scalar knob at loop level `level`: its index in KnobInfo::domain.
  int64_t index(size_t level) const { return index_[level]; }
  // Scalar knob: its value as a number (a choice: its index; a bool: 0/1).
  double number(size_t level) const { return slots_[level]; }
  // Cuts knob: the cut points.
  const IntList& cuts(size_t level) const { return cuts_[level]; }
  Config to_config() const;

 private:
  friend class CompiledSpace;
  const CompiledSpace* space_ = nullptr;
  const int64_t* index_ = nullptr;
  const double* slots_ = nullptr;
  const IntList* cuts_ = nullptr;
};

class CompiledSpace {
 public:
  // Analyses `space`. Throws Error (kParse / kInvalidArgument) naming file:line:column, the knob
  // or the constraint for every problem in the declaration.
  static CompiledSpace compile(const Space& space);

  CompiledSpace(CompiledSpace&&) noexcept;
  CompiledSpace& operator=(CompiledSpace&&) noexcept;
  ~CompiledSpace();

  const Space& space() const;
  // Knobs in loop order.
  const std::vector<KnobInfo>& knobs() const;

  // Number of valid configurations. Throws Error(kOutOfRange) past 2^64 - 1.
  uint64_t size() const;

  // Calls visit(const PointView&) for every configuration in index order. If visit returns bool,
  // false stops the enumeration.
  template <typename Visit>
  void for_each(Visit&& visit) const {
    using V = std::remove_reference_t<Visit>;
    for_each_impl(static_cast<void*>(&visit), [](void* f, const PointView& p) -> bool {
      if constexpr (std::is_same_v<decltype((*static_cast<V*>(f))(p)), bool>) {
        return (*static_cast<V*>(f))(p);
      } else {
        (*static_cast<V*>(f))(p);
        return true;
      }
    });
  }

  // REQUIRES: index < size(); otherwise Error(kOutOfRange).
  Config at(uint64_t index) const;
  // Throws Error(kInvalidArgument) with contains()'s reason when `config` is not in the space.
  uint64_t index_of(const Config& config) const;
  // Exactly uniform over the space. Throws Error(kInvalidArgument) when the space is empty.
  Config sample(Rng& rng) const;
  // Valid configurations that differ from `config` in one knob: for a number, the nearest valid
  // value below and above; for a choice, every other valid choice; for cut points, one cut moved
  // by one layer. When a knob that cut points depend on changes (e.g. pp), the cut points are
  // re-balanced for it. REQUIRES: contains(config).
  std::vector<Config> neighbours(const Config& config) const;
  Validity contains(const Config& config) const;

  // The dimension of encode(): one per numeric knob, one per choice of a choice knob, and one per
  // possible cut of a cuts knob.
  size_t encoded_size() const;
  // Numeric knobs: index / (n - 1); choices: one-hot; cut points: cut / layers, padded with 1.
  std::vector<double> encode(const Config& config) const;

  // For planners that choose pipeline cut points themselves (cost/planner.h): the space's one
  // cut-point knob (empty when it has none; Error(kInvalidArgument) for more than one), and a walk
  // over every valid configuration of the other knobs — `config` without the cut knob — with the
  // splits its cut knob allows there. Never enumerates the cuts. Stops when visit returns false.
  std::string cut_knob() const;
  void for_each_cut_family(
      const std::function<bool(const Config& config, const StageSplits& splits)>& visit) const;

  // A readable account of the analysis: knobs in loop order with their domains and derived
  // bounds, where each guard is checked, and how each constraint was classified.
  std::string describe() const;

  struct Impl;

 private:
  friend class PointView;
  explicit CompiledSpace(std::unique_ptr<Impl> impl);
  void for_each_impl(void* visit, bool (*call)(void*, const PointView&)) const;

  std::unique_ptr<Impl> impl_;
};

}  // namespace slapo::space
