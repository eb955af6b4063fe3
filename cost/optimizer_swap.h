#pragma once
// A profile derived across the optimizer: for a key that differs from a profiled one (the base)
// only in the optimizer (`fused_adamw`), every forward and backward is the base's, and so are the
// parameters and the state the optimizer keeps (two moments a parameter either way). What differs
// is the optimizer's step — its time, and its temporaries (LibTorch's AdamW makes a square root
// and a quotient of each parameter in turn; the fused one, none) —, which the profile measures
// apart from the steps (cost/profile.h). So each of the base's steps is the new key's, its time
// shifted by the optimizers' difference over the variant's parameters:
//
//   step'(L, x) = step(L, x) + (r' − r) · params(L)       r, r': ms a parameter, timed within the
//                                                           deep variant's steps, both keys
//
// (r · params(L) taken at most as step(L, x): a rate timed apart from the step may say more than
// the whole step took, and what is left, its forward and backward, is never below nothing);
// and its peak the base's wherever that was a moment of the forward or backward — raised to the
// new optimizer's step where that needs more. Where the base's step peaked in its optimizer step —
// each variant's one-sample step, and every step at its variant's one-sample peak (a small batch:
// its activations need less than the optimizer's temporaries) — what the step needs besides is not
// known, and the step is run again with the new optimizer (runners/profiler.h).
//
// (llama-mini at sequence 32, 6 blocks: of the base's ten steps, four peaked in LibTorch's AdamW,
// 2.2–6.9 MB above the fused AdamW's; the other six to the byte the same: docs/cost-model.md.)

#include <vector>

#include "cost/profile.h"

namespace slapo::cost {

// The base's steps that peaked in its optimizer step: each variant's (its blocks, checkpointed
// blocks) one-sample step in one micro-batch, and every step within a thousandth of its variant's
// one-sample peak.
std::vector<ProfilePoint> optimizer_bound_points(const Profile& base);

// The new key's profile: the base's, each step shifted by the optimizers' difference —
// `ms_per_param` against the base's optimizer_ms_per_param —, each peak the measured one of
// `measured` where it has the step (the same blocks, batch, checkpointed blocks and micro-batches:
// optimizer_bound_points run with the new optimizer) and elsewhere the base's, raised to the
// variant's one-sample peak measured; the new optimizer's figures. Every step is marked
// `derived`. Key, fingerprint, revision and profile_s are the caller's. Throws
// Error(kInvalidArgument) when `measured` lacks one of optimizer_bound_points(base).
Profile swap_optimizer(const Profile& base, double ms_per_param, double temp_bytes_per_element,
                       const std::vector<ProfilePoint>& measured);

}  // namespace slapo::cost
