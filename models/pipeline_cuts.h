#pragma once
// Where a pipeline's stages begin when the configuration does not say (no `cuts` knob): the
// blocks are split so that the slowest stage is as fast as it can be. Every block costs the same,
// and the last stage also runs the LM head and the loss, which in a small-hidden, large-vocabulary
// model weighs as much as a few blocks (gpt-mini: 2.3 blocks), so an even split of the blocks
// makes the last stage the bottleneck. Measured on gpt-mini at two stages (docs/benchmarks.md):
// the step of 1F1B with 8 micro-batches falls by ~15% when stage 2 begins at block 4, not 3.

#include <cstdint>
#include <vector>

#include "models/model_spec.h"

namespace slapo::models {

// The `stages − 1` block indices where stages 2, 3, ... begin (each stage at least one block),
// minimizing the largest stage cost (block forward FLOPs; the head counts on the last stage);
// among equals, a dynamic program prefers the smaller sum of squared stage costs, then the
// earlier cuts. Costs are taken at spec.max_seq,
// so every rank and every caller gets the same cuts. REQUIRES: 1 <= stages <= spec.layers.
std::vector<int64_t> balanced_cuts(const ModelSpec& spec, int64_t stages);

}  // namespace slapo::models
