#include "space/stage_splits.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace slapo::space {

StageSplits::StageSplits(int64_t layers, int64_t stages, int64_t min_len, int64_t max_len)
    : layers_(layers), stages_(stages), min_len_(std::max<int64_t>(min_len, 1)), max_len_(max_len) {
  max_len_ = std::min(max_len_, layers_);
  // The table has (stages + 1) × (layers + 1) cells and visiting a split recurses once per stage.
  SLAPO_CHECK(layers_ <= 1000000 && stages_ <= 10000 &&
                  (std::max<int64_t>(stages_, 0) + 1) * (layers_ + 1) <= 20'000'000,
              ErrorCode::kInvalidArgument, "cut points: ", stages_, " stages over ", layers_,
              " layers is too large (at most 10,000 stages, 1,000,000 layers and 2e7 "
              "stages × layers)");
  empty_ = stages_ < 1 || layers_ < 1 || stages_ > layers_ || min_len_ > max_len_ ||
           stages_ * min_len_ > layers_ || stages_ * max_len_ < layers_;
  if (empty_) return;
  table_.assign(static_cast<size_t>((stages_ + 1) * (layers_ + 1)), 0);
  auto cell = [&](int64_t s, int64_t l) -> uint64_t& { return table_[s * (layers_ + 1) + l]; };
  cell(0, 0) = 1;
  for (int64_t s = 1; s <= stages_; ++s) {
    for (int64_t l = s * min_len_; l <= std::min(layers_, s * max_len_); ++l) {
      uint64_t total = 0;
      for (int64_t len = min_len_; len <= max_len_ && len <= l; ++len) {
        const uint64_t w = cell(s - 1, l - len);
        if (w == kOverflow || total > kOverflow - 1 - w) {
          total = kOverflow;
          break;
        }
        total += w;
      }
      cell(s, l) = total;
    }
  }
  if (ways(stages_, layers_) == 0) empty_ = true;
}

uint64_t StageSplits::ways(int64_t s, int64_t l) const {
  if (empty_ || s < 0 || l < 0 || s > stages_ || l > layers_) return 0;
  return table_[s * (layers_ + 1) + l];
}

uint64_t StageSplits::count() const {
  if (empty_) return 0;
  const uint64_t n = ways(stages_, layers_);
  SLAPO_CHECK(n != kOverflow, ErrorCode::kOutOfRange, "splitting ", layers_, " layers into ",
              stages_, " stages has more than 2^64 - 1 ways");
  return n;
}

bool StageSplits::contains(const IntList& cuts) const {
  if (empty_ || static_cast<int64_t>(cuts.size()) != stages_ - 1) return false;
  int64_t previous = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const int64_t next = i < cuts.size() ? cuts[i] : layers_;
    const int64_t len = next - previous;
    if (len < min_len_ || len > max_len_) return false;
    previous = next;
  }
  return true;
}

IntList StageSplits::at(uint64_t rank) const {
  SLAPO_INTERNAL_ASSERT(rank < count(), "stage split rank ", rank, " out of range");
  IntList cuts;
  int64_t start = 0;
  for (int64_t stage = 0; stage + 1 < stages_; ++stage) {
    const int64_t remaining_stages = stages_ - stage - 1;
    for (int64_t len = min_len_; len <= max_len_; ++len) {
      const uint64_t w = ways(remaining_stages, layers_ - start - len);
      if (rank < w) {
        start += len;
        cuts.push_back(start);
        break;
      }
      rank -= w;
    }
  }
  return cuts;
}

uint64_t StageSplits::rank_of(const IntList& cuts) const {
  SLAPO_INTERNAL_ASSERT(contains(cuts), "rank_of a split that is not valid");
  uint64_t rank = 0;
  int64_t start = 0;
  for (int64_t stage = 0; stage + 1 < stages_; ++stage) {
    const int64_t remaining_stages = stages_ - stage - 1;
    const int64_t chosen = cuts[stage] - start;
    for (int64_t len = min_len_; len < chosen; ++len) {
      rank += ways(remaining_stages, layers_ - start - len);
    }
    start = cuts[stage];
  }
  return rank;
}

IntList StageSplits::balanced() const {
  SLAPO_INTERNAL_ASSERT(!empty_, "balanced() of an empty set of splits");
  IntList cuts;
  int64_t start = 0;
  for (int64_t stage = 0; stage + 1 < stages_; ++stage) {
    const int64_t remaining_stages = stages_ - stage;
    // The ideal cut for an equal split of what is left; take the feasible length nearest to it.
    const double ideal =
        static_cast<double>(layers_ - start) / static_cast<double>(remaining_stages);
    int64_t best = -1;
    double best_distance = 0;
    for (int64_t len = min_len_; len <= max_len_; ++len) {
      if (ways(remaining_stages - 1, layers_ - start - len) == 0) continue;
      const double distance = std::fabs(static_cast<double>(len) - ideal);
      if (best < 0 || distance < best_distance) {
        best = len;
        best_distance = distance;
      }
    }
    SLAPO_INTERNAL_ASSERT(best >= 0, "no feasible stage length while balancing");
    start += best;
    cuts.push_back(start);
  }
  return cuts;
}

}  // namespace slapo::space
