#pragma once
// Profiles derived from a profiled base key (runners/profiler.h, ProfileRequest::base): what
// another key differs by is measured — inside the blocks, in the head, in the optimizer — and the
// rest is the base's (cost/derived_profile.h, cost/head_difference.h, cost/optimizer_swap.h).

#include <cstdint>
#include <vector>

#include "core/config.h"
#include "cost/profile.h"
#include "models/template_config.h"
#include "runners/workload.h"

namespace slapo::runners {

// Keys that differ from `base` (of `base_knobs`) only inside the blocks: their blocks and the
// base's alone, in the same rounds (runners/block_probe.h), at the batches of the base's deep
// variant; checkpointed, composed from the plain differences at the batches the base was measured
// all-checkpointed at (cost::checkpointed_from_plain). The deep steps are composed from the base's
// and the rest is derived (cost/derived_profile.h), one profile per key.
std::vector<cost::Profile> measure_derived(const Workload& w, const std::vector<Config>& knobs,
                                           const cost::Profile& base, const Config& base_knobs);

// A key that differs from `base` only in the head (cost/head_difference.h): its own one-block
// steps at every batch and micro-batch count `base`'s were measured at, for their bytes (exact at
// any step), and the rest of `base` shifted by what they differ by. Their time is the base's (and
// the optimizer's over the parameters the head has more) and what the head costs more on one block,
// paired with the base's steps where both rounds agree (cost::paired_head_ms): what gpt-mini's
// fused loss saves shows at depth (runners/cost_model.h measures the deep steps) — on one block
// 0.05 ms a sample, where one unpaired step on this machine differed from the base's by −12 to +110
// ms at 16 samples and through the block's time moved the recompute extrapolated to 60 samples by
// 20% —, and BERT's, which computes the masked positions' logits alone, on one block too
// (docs/cost-model.md). A key of another embedding split (`embed_shard`, of
// `base_knobs`' under tensor parallelism) runs its checkpointed deep steps where the base's ran,
// for their bytes too: a checkpointed block keeps its input, and the first one's is what the
// embeddings make (all-gathered when split by the hidden size) — gpt-tiny at 8 samples kept 8 kB
// more than the base's difference along the plain steps says. Another head changes no block's
// input, and its profile runs none.
cost::Profile measure_across_head(const Workload& w, const Config& knobs, const Config& base_knobs,
                                  const cost::Profile& base);

// A key that differs from `base` (of `base_knobs`) only in the optimizer (cost/optimizer_swap.h):
// the base's steps that peaked in its optimizer step run again with this key's, a sweep per
// variant; the optimizers' difference timed within the deep variant's one-sample steps, the base's
// first and this key's in its sweep after it, each model warmed up by a step of its own.
cost::Profile measure_across_optimizer(const Workload& w, const Config& knobs,
                                       const models::TemplateConfig& tc, const Config& base_knobs,
                                       const cost::Profile& base, int64_t few);

}  // namespace slapo::runners
