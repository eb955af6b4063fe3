#pragma once
// A profile derived across the head: for a key that differs from a profiled one only in the knobs
// of the model's head — the final norm, the LM head and its loss (`fused_lm_loss`) — or, under
// tensor parallelism, in how the embedding and the LM head tied to it are split (`embed_shard`),
// every block is the other's, so each of its steps is the other's plus what the work outside the
// blocks differs by, which does not depend on how many blocks run between the two ends:
//
//   step'(L, x) = step(L, x) + Δms(x)        peak'(L, x) = peak(L, x) + Δpeak(x)
//
// at every depth L and checkpointing, Δ measured on the one-block variants of the two keys
// (runners/profiler.h: the new key's one-block steps at the base's one-block batches) and
// interpolated along the batch between them. The peak's difference transfers from one block to
// many where the step peaks at the loss in both — the large batches, where the head's logits are
// most of what it allocates; at a few samples both keys' steps peak elsewhere (the optimizer's
// step) and both differences are zero (gpt-mini: docs/cost-model.md).
//
// The mirror of cost/derived_profile.h (keys that differ only inside the blocks): the two compose
// — a key with another attention and another head is its attention variant's profile shifted by
// the head's difference (head_differences of a pair that differs only in the head), no step of it
// run.

#include <cstdint>
#include <vector>

#include "cost/profile.h"

namespace slapo::cost {

// What the step of `layers` blocks in `micro_batches` GPipe micro-batches of `batch` samples costs
// more with the new head than with the base's (negative: less): its time (NaN: not known) and its
// peak. Measured on one block (runners/profiler.h), and on the deep variant where its steps
// were measured (the time a head saves grows with the blocks before it; the peak's difference
// need not stay on the line through the one-block batches: gpt-mini's fused head at batch 80,
// docs/cost-model.md).
struct HeadDifference {
  int64_t batch = 0;
  int64_t layers = 1;
  int64_t micro_batches = 1;
  double ms = 0;
  double peak_bytes = 0;
  // Under tensor parallelism, the collectives a rank's step makes more (cost::CollectiveTally: the
  // head's all-gather of the logits' parts against the fused loss's all-reduces of a few numbers a
  // token). They do not depend on the blocks before the head: shift_head reads the one-block
  // differences' (along the batch) at every depth, and a point's own in several micro-batches.
  CollectiveTally collectives;
  // A step with its first `ckpt_blocks` blocks checkpointed: its peak's difference is that point's
  // own (what the first checkpointed block keeps is its input, which the embeddings make: an
  // all-gathered tensor when tensor parallelism splits the embedding by the hidden size, 8 kB more
  // on gpt-tiny at 8 samples than the line through the plain steps says); its time is NaN.
  int64_t ckpt_blocks = 0;
};

// The parameters outside the blocks one key has more than another (negative: fewer): the
// embeddings', the head's and those the two ends share (a tied weight). The fused LM loss changes
// none; how the embedding is split under tensor parallelism (`embed_shard`) changes all three.
struct OutsideParams {
  double prologue = 0, epilogue = 0, tied = 0;
  // The largest single parameter of the new ends (ModelShape), theirs, not a difference: 0 leaves
  // the shifted profile's.
  double largest_prologue_tensor = 0, largest_epilogue_tensor = 0;
  // The new head's chunk of the loss (ModelShape::loss_chunk_samples), theirs: -1 leaves the
  // shifted profile's.
  double loss_chunk_samples = -1;
  // Of a model (ModelShape::variant_params): what its optimizer steps over more.
  double total() const { return prologue + epilogue - tied; }
};
// `to`'s parameters outside the blocks less `from`'s, and `to`'s largest ones.
OutsideParams outside_params_more(const ModelShape& to, const ModelShape& from);

// What a head costs more on one block at a batch (negative: less), from `rounds` of paired
// measurements — the new key's step less the base's, each round in the other order: the smaller of
// them when every round agrees in sign, else 0. gpt-mini's fused loss saves 0.05 ms a sample on one
// block, below what two steps of this machine agree on, and a noisy difference passed on through a
// block's time moved the recompute extrapolated to 60 samples by 20% (docs/cost-model.md); BERT's
// fused loss computes the masked positions' logits alone, and its saving is the head's own: taken
// from the base, it was spread over every block, a pipeline's first stage included.
double paired_head_ms(const std::vector<double>& rounds);

// `profile` with every point shifted by the difference at its batch and marked `derived`; its
// shape's parameters outside the blocks `more` more. In one micro-batch: the peak interpolated
// along the batch between the one-block differences and those of the point's own depth,
// extrapolated along the nearest segment beyond them; the time likewise between the depth's own
// known ones alone where it has any (one: in proportion to the batch), else the one-block ones;
// the collectives along the one-block ones; a checkpointed point's peak by its own difference where
// given. In more micro-batches: the difference measured at that point. Throws
// Error(kInvalidArgument) when no one-block difference of one micro-batch is given, or a point of
// several micro-batches has none of its own.
Profile shift_head(const Profile& profile, const std::vector<HeadDifference>& differences,
                   const OutsideParams& more = {});

// What `to` differs by from `from` at `from`'s one-block points of no checkpointing that `to`
// has too — the differences shift_head applied, recovered from a profile it derived (or from two
// measured ones) —, and at `to`'s measured steps of the model's depth without checkpointing:
// where `from` measured that batch, the time against its line there (its prediction, uncalibrated:
// a slow step of `from`'s off the line is not the head's) and the peak and the collectives against
// the measured ones; elsewhere the peak alone, against its prediction; and the peak of `to`'s
// checkpointed deep steps at a batch where `from` has one (measured or composed: a profile
// shift_head derived holds the difference it was given). Profiles of one rank of a
// tensor-parallel group are compared as measured: its compute and memory (a simulated rank's steps
// hold no collective's time) and the collectives it counted. Throws Error(kInvalidArgument) when
// they share no one-block point of one micro-batch.
std::vector<HeadDifference> head_differences(const Profile& from, const Profile& to);

}  // namespace slapo::cost
