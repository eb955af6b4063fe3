#pragma once
// The pipeline cut points a prediction likes best, without enumerating them: 96 layers into 16
// stages of 4–8 layers is 10,651,488,789 splits, searched here in milliseconds.
//
// The predicted step (cost/predictor.h) is  Σ_s t_s + (m − 1) · max_s t_s + max_s tail_s + c,
// where a stage's t_s, tail_s and peak depend only on its position and its blocks. For a bound M
// on the slowest stage and a bound R on the slowest tail, a dynamic program over (stage, first
// block) finds the least Σ t_s among the splits whose every stage fits the memory budget and both
// bounds; the optimum is the least Σ + (m − 1)·M + R over the bounds the stages can take (the
// distinct values of t_s and tail_s), so the split found is optimal for the model — exactly, not
// approximately — in O(|M| · |R| · stages · layers · (max − min + 1)). Among splits of equal
// predicted step the most even (least Σ t_s²) is chosen.

#include <cstdint>
#include <optional>

#include "core/value.h"
#include "cost/predictor.h"
#include "space/stage_splits.h"

namespace slapo::cost {

struct CutSearch {
  IntList cuts;               // where stages 2, 3, ... begin
  Prediction prediction;      // of the input with these cuts
  uint64_t bounds_tried = 0;  // pairs of bounds, or splits, tried
  bool enumerated = false;    // every split tried (CutMethod::kEachSplit)
};

// How the split is found; both are exact for the model. kCheapest: each split tried where there
// are fewer splits than pairs of bounds the dynamic program would try (two stages of 48 blocks: 47
// splits against up to 94 × 94 bounds), the dynamic program elsewhere.
enum class CutMethod { kCheapest, kDynamicProgramming, kEachSplit };

// The split of `splits` that minimises the predicted step of `in` (in.cuts is ignored; in.pp must
// be splits.stages()) among those whose every stage's predicted peak is within `budget_bytes`
// (0: no budget); nullopt when none fits. Among splits of equal predicted step, the most even.
std::optional<CutSearch> best_cuts(const Predictor& predictor, const PredictInput& in,
                                   const space::StageSplits& splits, double budget_bytes,
                                   CutMethod method = CutMethod::kCheapest);

}  // namespace slapo::cost
