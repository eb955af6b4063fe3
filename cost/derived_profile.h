#pragma once
// A profile derived from another: for a key that differs from an already profiled one (the base)
// only inside the blocks — another attention implementation, a fused MLP — everything outside the
// blocks is the base's (embeddings, final norm, LM head and loss, the optimizer step), so the deep
// variant alone tells the new block apart, without the one-block variant:
//
//   B'(x) = B(x) + (T'(x) − T(x)) / D       a block: the base's, plus what the deep variants of D
//                                           blocks differ by, shared among their blocks
//   state, act per block: likewise, from the deep variants' fitted memory lines
//   ρ', kept': the deep variant with every block checkpointed, measured
//
// (The difference of the deep variants, not of the one-block ones: a one-block difference would
// be multiplied by D − 1 in every prediction, and the one-block step is mostly the rest's.) The
// one-block variant's points are then composed — as the profiler would have measured them if the
// model were exactly the sum of its blocks and the rest — and marked `derived`, so the Predictor
// reads the derived profile as any other.

#include <vector>

#include "cost/profile.h"

namespace slapo::cost {

// `deep_steps`: the new key's deep variant (the base's depth) without checkpointing at two or
// more batches above one sample — the base's batches, for the difference to be measured, not
// interpolated — and once with every block checkpointed (micro_batches 1, tp 1). `shape`: the new
// key's parameters. The result has the base's depth, optimizer and embeddings' times, `shape`, the
// measured points and the composed ones; key, fingerprint, revision and profile_s are the
// caller's. Throws Error(kInvalidArgument) when the base is of tp > 1 (its collectives are not
// derived) or the steps lack what is needed.
Profile derive_profile(const Profile& base, const std::vector<ProfilePoint>& deep_steps,
                       const ModelShape& shape);

}  // namespace slapo::cost
