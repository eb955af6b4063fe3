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
// Under tensor parallelism the base and the new key are one rank of the same group (the same
// splits): the new key's collectives are the base's and what its blocks make more, per block —
// for an attention variant, none (the splits decide them) — counted by the probe on a simulated
// group (runners/simulated_group.h), composed into every point as the times are.
//
// (The difference of the deep variants, not of the one-block ones: a one-block difference would
// be multiplied by D − 1 in every prediction, and the one-block step is mostly the rest's.) The
// one-block variant's points are then composed — as the profiler would have measured them if the
// model were exactly the sum of its blocks and the rest — and marked `derived`, so the Predictor
// reads the derived profile as any other.
//
// The new key's deep steps need not be run whole: what a block differs by can be measured on one
// block of each key alone (runners/block_probe.h: forward and backward of the block on the
// embeddings' output, the two keys timed in alternation, a tenth of a deep step), and the deep
// steps composed from the base's (deep_steps_from_blocks).

#include <vector>

#include "cost/profile.h"

namespace slapo::cost {

// `deep_steps`: the new key's deep variant (the base's depth) without checkpointing at two or
// more batches above one sample — the base's batches, for the difference to be measured, not
// interpolated — and with every block checkpointed at one of them, the largest such read for the
// recompute (micro_batches 1, the base's tp, with their collectives; one at the smallest batch is
// the least peak, else composed from the base's). `shape`: the new key's parameters. The result has
// the base's depth, tp, optimizer and embeddings' times, `shape`, the measured points and the
// composed ones; key, fingerprint, revision and profile_s are the caller's. Throws
// Error(kInvalidArgument) when the steps lack what is needed.
Profile derive_profile(const Profile& base, const std::vector<ProfilePoint>& deep_steps,
                       const ModelShape& shape);

// What one block of the new key costs more than one block of the base (negative: less), measured
// on the two blocks alone at `batch` samples, plain or checkpointed: forward and backward time,
// the bytes its forward keeps for backward, the bytes its backward needs above them at once, the
// forward's time alone, and the block's parameters (the same at every batch); under tensor
// parallelism the collectives of its forward and backward, and of its forward alone.
struct BlockDifference {
  int64_t batch = 0;
  bool checkpointed = false;
  double ms = 0;
  double kept_bytes = 0;
  double transient_bytes = 0;
  double forward_ms = 0;
  double params = 0;
  CollectiveTally collectives, forward_collectives;
};

// The checkpointed difference at `plain`'s batch, composed from the plain one rather than measured:
// a checkpointed block runs its forward once more (in its backward), keeps nothing but its input
// (the same tensor for either key), and its backward needs what the plain block kept, recomputed,
// plus what the plain backward needs above it:
//
//   ms = Δms + Δforward_ms      kept = 0      transient = Δkept + Δtransient
//   collectives = Δcollectives + Δforward_collectives
//
// The composed bytes are those of the checkpointed blocks measured (three attention variants:
// tests/runners/block_probe_test.cc); what it saves is a warm-up and three rounds of both blocks
// checkpointed at the base's largest checkpointed batch, per key.
BlockDifference checkpointed_from_plain(const BlockDifference& plain);

// The new key's deep steps composed from the base's measured deep steps and the blocks'
// differences, for derive_profile: at each batch of the base's deep variant without checkpointing,
// and at each it was measured at with every block checkpointed (the largest, and one sample: the
// least peak),
//
//   step' = step + D · Δms + the optimizer over D · Δparameters
//   peak' = peak + D · (Δstate + Δkept) + max(0, Δtransient)
//   collectives' = collectives + D · Δcollectives
//
// — every block keeps its own activations until its backward, one block's backward runs at a
// time; a transient that shrinks is not counted (the step's peak may lie elsewhere, at the loss:
// an under-prediction is a trial run out of memory). Δstate: the base's bytes of state per block
// parameter times the difference of parameters. The steps are marked `derived`. Throws
// Error(kInvalidArgument) when a batch the base's deep variant was measured at, plain or
// checkpointed, has no difference.
std::vector<ProfilePoint> deep_steps_from_blocks(const Profile& base,
                                                 const std::vector<BlockDifference>& differences,
                                                 const ModelShape& shape);

// The new key's block alone (cost::BlockBytes): the base's, and the lines through what the plain
// differences' kept and transient bytes differ by at their smallest and largest batch (exact
// bytes, measured in the same runs as the rest of the difference). Not measured when the base's
// was not or fewer than two plain batches were probed.
BlockBytes block_bytes_from(const Profile& base, const std::vector<BlockDifference>& differences);

}  // namespace slapo::cost
