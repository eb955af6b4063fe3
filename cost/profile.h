#pragma once
// Profile: what a short profiling run measured of one workload on this machine, and what it
// depends on. Plain data: measured by runners/cost_model.h (LibTorch), stored by db/, read by the
// Predictor.
//
// The points are training steps of two variants of the model that differ only in depth — one
// block and `deep` blocks (the workload's depth, at most 8) — so that a block's costs and the
// costs outside the blocks (embeddings, final norm, LM head, loss) separate; a model of any depth
// and any pipeline stage is composed from them. Under tensor parallelism the points are one rank
// of the group, measured alone (runners/simulated_group.h), with the collectives it would make.

#include <cstdint>
#include <string>
#include <vector>

namespace slapo::cost {

// The tensor-parallel collectives of one step: calls and payload bytes. Tallies add and scale: a
// derived key's are its base's and what its blocks make more (cost/derived_profile.h).
struct CollectiveTally {
  double all_reduce_calls = 0, all_reduce_bytes = 0, all_gather_calls = 0, all_gather_bytes = 0;
  CollectiveTally operator+(const CollectiveTally& o) const;
  CollectiveTally operator-(const CollectiveTally& o) const;
  CollectiveTally operator*(double k) const;
  bool operator==(const CollectiveTally& o) const;
};

// One measured step of `batch` samples of the variant of `layers` blocks, the first `ckpt_blocks`
// checkpointed, in one process, in `micro_batches` GPipe micro-batches.
struct ProfilePoint {
  int64_t layers = 0;
  int64_t batch = 0;
  int64_t ckpt_blocks = 0;
  int64_t micro_batches = 1;
  double step_ms = 0;     // median over the timed steps
  double peak_bytes = 0;  // the tracking allocator's peak: parameters, gradients, optimizer state,
                          // activations
  CollectiveTally collectives;  // none at tp = 1
  // Composed from the measured points and a base profile, not measured (cost/derived_profile.h).
  bool derived = false;
  bool operator==(const ProfilePoint& o) const;
};

// Counted on the built model, per rank (tensor-parallel shards).
struct ModelShape {
  double block_params = 0;     // one block's parameters
  double prologue_params = 0;  // embeddings (the first pipeline stage)
  double epilogue_params = 0;  // final norm and LM head (the last stage), a tied weight included
  double tied_params = 0;      // held by both ends (the tied embedding and LM head)
  double message_bytes_per_sample = 0;  // a pipeline message: one sample's hidden states
  // The elements of the largest single parameter of a block, of the prologue and of the epilogue:
  // the optimizer's temporaries are of one parameter at a time (Profile's
  // optimizer_temp_bytes_per_element). 0 in a profile stored before they were counted.
  double largest_block_tensor = 0, largest_prologue_tensor = 0, largest_epilogue_tensor = 0;
  // The token batch a step holds beside the model, in bytes (a trial's peak counts it). A trial's
  // (runners/token_batches.h): input_bytes_at0 + input_bytes_per_sample · the global batch —
  // every rank holds the whole batch's windows, and a workload's data file whole. And what each of
  // the profile's own steps held per sample (random tokens, of the step's samples alone), which
  // the fitted activations take in (cost/predictor.h takes it out again). 0 in a profile stored
  // before they were measured (2026-11-29): the tokens then counted as the profile's steps held
  // them, a micro-batch's, and gpt-tiny's 1F1B micro-batches were under-predicted by the others'
  // 136 bytes a sample (0.16% at 1,530 samples, trials at the budget's edge out of memory).
  double input_bytes_at0 = 0, input_bytes_per_sample = 0, profiled_input_bytes_per_sample = 0;
  // Where the loss computes its logits a chunk of tokens at a time (the fused LM loss), the
  // samples of a micro-batch that fill a chunk: its buffer grows with the samples up to that and
  // no further, so the deep variant's peaks bend there (cost/predictor.h, Fit::deep_bend). 0: no
  // chunk, or a profile stored before it was read (2026-11-30).
  double loss_chunk_samples = 0;
  // The bytes of a trial's token batch of `batch` samples.
  double input_bytes(double batch) const {
    return input_bytes_at0 + input_bytes_per_sample * batch;
  }
  // The parameters of the whole model with `blocks` blocks on one rank.
  double variant_params(double blocks) const {
    return blocks * block_params + prologue_params + epilogue_params - tied_params;
  }
  bool operator==(const ModelShape& o) const;
};

// One block alone (runners/block_probe.h), in bytes, lines in the samples (exact: the tracking
// allocator): what its forward keeps for its backward (its output included), and what its
// backward needs at once above that and the gradient it receives — the gradients of its
// activations, each parameter's gradient before it is added to the one kept. A pipeline stage
// before the last peaks in its top block's backward: no loss runs beside it (cost/predictor.h).
struct BlockBytes {
  bool measured = false;  // false: a profile stored before they were measured
  double kept_at0 = 0, kept_per_sample = 0, backward_at0 = 0, backward_per_sample = 0;
  // What the block keeps checkpointed (its output, and what the checkpoint holds to recompute it;
  // its input is the block's below): measured where the space checkpoints, since 2026-11-29.
  bool checkpointed_measured = false;
  double ckpt_kept_at0 = 0, ckpt_kept_per_sample = 0;
  double kept(double samples) const { return measured ? kept_at0 + kept_per_sample * samples : 0; }
  double ckpt_kept(double samples) const {
    return checkpointed_measured ? ckpt_kept_at0 + ckpt_kept_per_sample * samples : 0;
  }
  double backward(double samples) const {
    return measured ? backward_at0 + backward_per_sample * samples : 0;
  }
  bool operator==(const BlockBytes& o) const;
};

struct Profile {
  // What the measurements depend on (canonical JSON): the workload without its batch size, the
  // knobs that change the computation (attention, fusions, sequence length), the tensor-parallel
  // degree and the threads of a rank.
  std::string key_json = "{}";
  std::string fingerprint_json = "{}";  // the machine (runners/system_info.h), compared on reuse
  std::string
      code_revision;   // kMeasuringRevision: the measuring code of another revision profiles again
  int64_t layers = 0;  // blocks of the workload's model (what is predicted)
  int64_t tp = 1;      // the tensor-parallel degree of the measured rank
  ModelShape shape;
  double optimizer_ms_per_param = 0;  // one optimizer step, per parameter of the rank
  // One optimizer step of the whole model with `blocks` blocks: the least a step of it takes.
  double optimizer_ms(double blocks) const {
    return optimizer_ms_per_param * shape.variant_params(blocks);
  }
  // The optimizer step's temporaries, bytes per element of a parameter (measured on one flat
  // tensor: AdamW's sqrt and quotient, 8; the fused AdamW's none): made for one parameter at a
  // time, those of a rank's largest set its least peak. -1: a profile stored before they were
  // measured.
  double optimizer_temp_bytes_per_element = -1;
  double prologue_ms_per_sample = 0;  // the embeddings' forward and backward
  BlockBytes block_bytes;
  std::vector<ProfilePoint> points;
  double profile_s = 0;  // what profiling cost, wall time

  std::string to_json() const;
  // Throws Error(kParse) naming `origin` for text that is not a profile.
  static Profile from_json(const std::string& json, const std::string& origin);
};

// A step's peak within this share of its variant's one-sample peak is the optimizer step's, not
// the activations' (that peak does not grow with the batch: equal to the byte where it is the
// peak). Read by the predictor's fit and by the derivation across the optimizer
// (cost/optimizer_swap.h).
constexpr double kAtTheOneSamplePeak = 1e-3;

// Whether `profile` has the one-block step in two GPipe micro-batches (measured or derived): what
// the loss keeps per micro-batch in flight, which only configurations running GPipe in more than
// one micro-batch read (cost/predictor.h). A profile measured for a space without them has none
// (runners/profiler.h), and is extended by one that has them.
bool has_gpipe_step(const Profile& profile);
// Whether `profile` has a step of its deep variant with checkpointed blocks (measured or derived):
// only configurations that checkpoint blocks read it. A profile measured for a space that
// checkpoints none has none (runners/profiler.h), and is extended by one that does.
bool has_checkpointed_step(const Profile& profile);

}  // namespace slapo::cost
