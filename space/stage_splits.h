#pragma once
// The ways to split `layers` consecutive layers into `stages` pipeline stages of `min_len` to
// `max_len` layers each, as cut points: the first layer of stages 2..S, ascending.
//
// Counted by dynamic programming (ways[s][l] = splits of l layers into s stages), so counting,
// ranking and unranking cost O(stages · layers · (max - min)) once and O(stages · (max - min))
// per call: 96 layers into 16 stages of 4–8 is 10,651,488,789 splits, counted in microseconds.
// Ranks follow the lexicographic order of the cut points.

#include <cstdint>
#include <vector>

#include "core/value.h"

namespace slapo::space {

class StageSplits {
 public:
  // Any argument out of range (stages < 1, layers < 0, min > max) gives an empty set.
  StageSplits(int64_t layers, int64_t stages, int64_t min_len, int64_t max_len);

  // Throws Error(kOutOfRange) when the count exceeds 2^64 - 1.
  uint64_t count() const;
  bool contains(const IntList& cuts) const;
  // REQUIRES: rank < count().
  IntList at(uint64_t rank) const;
  // REQUIRES: contains(cuts).
  uint64_t rank_of(const IntList& cuts) const;
  // The split closest to equal stages (stage lengths as near to layers/stages as the bounds let).
  // REQUIRES: count() > 0.
  IntList balanced() const;

  // Calls visit(cuts) for every split in rank order; stops early when visit returns false.
  // Returns false when stopped early.
  template <typename Visit>
  bool for_each(Visit&& visit) const {
    if (empty_) return true;
    IntList cuts(stages_ - 1);
    return walk(0, 0, &cuts, visit);
  }

  int64_t layers() const { return layers_; }
  int64_t stages() const { return stages_; }
  int64_t min_len() const { return min_len_; }
  int64_t max_len() const { return max_len_; }

 private:
  // Splits of `l` layers into `s` stages (saturating at kOverflow).
  uint64_t ways(int64_t s, int64_t l) const;

  template <typename Visit>
  bool walk(int64_t stage, int64_t start, IntList* cuts, Visit& visit) const {
    const int64_t remaining_stages = stages_ - stage;
    if (remaining_stages == 1) return visit(static_cast<const IntList&>(*cuts));
    const int64_t remaining = layers_ - start;
    for (int64_t len = min_len_; len <= max_len_; ++len) {
      const int64_t rest = remaining - len;
      if (rest < (remaining_stages - 1) * min_len_) break;
      if (rest > (remaining_stages - 1) * max_len_) continue;
      (*cuts)[stage] = start + len;
      if (!walk(stage + 1, start + len, cuts, visit)) return false;
    }
    return true;
  }

  static constexpr uint64_t kOverflow = UINT64_MAX;
  int64_t layers_, stages_, min_len_, max_len_;
  bool empty_ = false;
  std::vector<uint64_t> table_;  // (stages_ + 1) × (layers_ + 1)
};

}  // namespace slapo::space
