#pragma once
// Predictor: the step time and peak tensor memory per rank of a configuration, from a Profile and
// the machine's collectives, composed the way the runtime executes a step
// (runners/parallel_trainer.h, schedule/runtime/pipeline.h):
//
//   A rank holds pipeline stage s: n_s blocks (the first k_s of them checkpointed), the embeddings
//   on the first stage, the final norm, LM head and loss on the last; every micro-batch of
//   x = batch / (dp · m) samples runs through the stages, and a stage's work per micro-batch is
//     t_s(x) = n_s · B(x) + k_s · ρ · B(x) + [last] E(x) + [first] P(x)
//              + tensor-parallel collectives (the rank's measured calls and bytes, priced by α–β)
//              + pipeline messages to and from its neighbours (x samples' hidden states)
//   with B(x) a block's forward and backward, E(x) the epilogue's, P(x) the prologue's — the
//   profile's two depths separate them — and ρ the share of a block's work its recompute adds.
//   Both schedules keep every stage busy the same way: the step is
//     Σ_s t_s + (m − 1) · max_s t_s            (fill and drain + the slowest stage m − 1 times)
//   then, per rank: the optimizer over its parameters, the data-parallel all-reduce of its
//   gradients (in buckets), the tied embedding's gradient summed between the ends.
//
//   A stage's memory: its parameters, gradients and optimizer state (the profile's per-block and
//   outside-the-blocks state, split between the ends by their parameters), and the activations of
//   the micro-batches in flight — m under GPipe, min(m, p − s) under 1F1B — each keeping, per
//   sample, a block's activations for a plain block and what a checkpointed one keeps, and what
//   the loss keeps on the last stage; at its peak either at the head (the loss running backward)
//   or at the top recompute (the micro-batch's checkpointed blocks and one block recomputed, its
//   plain blocks freed by then).
//
// Measured trials correct the model (calibrate). Blind spots: docs/cost-model.md.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/collectives.h"
#include "cost/profile.h"

namespace slapo::cost {

// What a prediction needs of a configuration.
struct PredictInput {
  int64_t batch = 1;  // the global batch
  int64_t ckpt_blocks = 0;
  int64_t micro_batches = 1;
  int64_t tp = 1, pp = 1, dp = 1;
  bool gpipe = false;         // else 1F1B
  std::vector<int64_t> cuts;  // the blocks where stages 2, 3, ... begin (pp - 1 of them)
  // What a sample is, for the throughputs a trial reports besides samples/s (0: unknown, those
  // not predicted): its tokens, and the model FLOPs of its forward and backward as the runner
  // counts them (runners/workload.cc: three forwards, recomputation not counted).
  double tokens_per_sample = 0;
  double flops_per_sample = 0;
};

// One pipeline stage of a prediction.
// The moment of a step that sets a rank's peak (a closed set: a prediction of every configuration
// of a space carries one per stage, no string made).
enum class PeakMoment {
  kLossBackward,       // the loss running backward, every micro-batch in flight kept
  kTopBlockBackward,   // a pipeline stage before the last: its top block's backward
  kRecompute,          // a checkpointed block recomputed for its backward
  kOptimizerStep,      // the least peak: the optimizer step
  kLeastProfiled,      // on one rank, above the optimizer step: the least profiled (a backward's)
  kGradientAveraging,  // data parallelism: the gradients averaged, a bucket of them packed
};
// "the loss's backward", "its top block's backward", "a checkpointed block's recompute", "the
// optimizer step", "the model's least (profiled: one sample, every block checkpointed)", "the
// gradients' averaging (a bucket packed)".
const char* to_string(PeakMoment moment);

struct StagePrediction {
  int64_t blocks = 0;
  double micro_batch_ms = 0;  // t_s
  double peak_bytes = 0;
  PeakMoment peak_at = PeakMoment::kLossBackward;
};

struct Prediction {
  double step_ms = 0;
  double peak_bytes = 0;                           // the largest rank's
  PeakMoment peak_at = PeakMoment::kLossBackward;  // the largest rank's
  double samples_per_s = 0;
  double tokens_per_s = 0;  // 0 when the input names no tokens per sample
  double tflops = 0;        // model TFLOP/s; 0 when the input names no FLOPs per sample
  // name → milliseconds, adding up to step_ms: "compute" and "recompute" (the slowest stage, every
  // micro-batch), "collectives" (its tensor-parallel collectives and pipeline messages, the
  // gradients' all-reduces), "bubble" (the other stages' fill and drain), "optimizer".
  std::vector<std::pair<std::string, double>> time_ms;
  // name → bytes of the largest rank, adding up to peak_bytes: "parameters", "gradients",
  // "optimizer_state", "activations", "logits", "inputs" (the step's token batch).
  std::vector<std::pair<std::string, double>> memory_bytes;
  std::vector<StagePrediction> stages;
  std::vector<std::string> notes;  // what the prediction extrapolates

  // {"step_ms", "peak_bytes", "peak_at", "samples_per_s", "tokens_per_s", "tflops" (those two
  //  where known), "time_ms": {...}, "memory_bytes": {...}, "stages": [...], "notes": [...]}
  std::string to_json() const;
};

class Predictor {
 public:
  // Fits the model. `collectives` may be absent when only one rank is predicted. Throws
  // Error(kInvalidArgument) when the profile lacks what the model needs.
  explicit Predictor(Profile profile, std::optional<CollectiveModel> collectives = std::nullopt);

  // Throws Error(kInvalidArgument) for a layout this predictor cannot compose: another tp than the
  // profile's, cuts that do not fit the blocks, ranks without a collective model.
  Prediction predict(const PredictInput& in) const;

  // A measured trial of `in`: later predictions are rescaled — time by measured / predicted of the
  // trials near them (time_scale), memory by the largest ratio of all (an under-prediction is a
  // trial run into out of memory).
  void calibrate(const PredictInput& in, double step_ms, double peak_bytes);
  // A trial of `in` that ran out of memory under `budget_bytes`: memory predictions are raised so
  // that it is predicted over the budget.
  void calibrate_oom(const PredictInput& in, double budget_bytes);
  // The factor calibration put on memory predictions (1 before any; never below), and raising it
  // to another key's of the same family — keys whose profiles share one base's memory fit
  // (cost/derived_profile.h), and so its error: one key's out-of-memory trial at the edge of the
  // budget is every attention variant's at that batch.
  double memory_scale() const { return memory_scale_; }
  void raise_memory_scale(double scale) { memory_scale_ = std::max(memory_scale_, scale); }
  // Whether a measured trial has calibrated the time predictions yet.
  bool time_calibrated() const { return !observed_.empty(); }

  const Profile& profile() const { return profile_; }
  bool has_collectives() const { return collectives_.has_value(); }
  void set_collectives(CollectiveModel collectives) { collectives_ = std::move(collectives); }

  // Tensor-parallel collectives per micro-batch: calls, and bytes = at0 + per_sample · x.
  struct CommLine {
    double calls = 0, bytes_at0 = 0, bytes_per_sample = 0;
  };
  // The fitted coefficients (for tests and docs/cost-model.md).
  struct Fit {
    int64_t deep_layers = 0;
    // A step's forward and backward (the optimizer taken out), by batch, of the two variants.
    std::vector<std::pair<double, double>> shallow_ms, deep_ms;
    double recompute_share = 0;                 // ρ
    double block_state = 0, outside_state = 0;  // bytes
    double block_act = 0, outside_act = 0;      // bytes per sample
    // Of outside_act, the head's and the loss's: the profile's steps' tokens taken out (a step
    // holds the whole batch's, counted apart: ModelShape::input_bytes).
    double loss_act = 0;
    // Of loss_act, what the loss keeps from its forward to its backward (the rest it needs only
    // while running backward): a GPipe last stage keeps it for every micro-batch.
    double outside_kept = 0;
    // Whether the profile has a checkpointed step (cost::has_checkpointed_step): else no
    // configuration with checkpointed blocks is predicted, and the two below are not known.
    bool checkpointed = false;
    // Bytes per sample a checkpointed block keeps, as the step with every block checkpointed
    // reads one against the plain step (what checkpointing saved, per block).
    double ckpt_block_kept = 0;
    // Where a checkpointed block was measured alone (BlockBytes::ckpt_kept) and that step peaked
    // above what its loss's moment holds — at its top block's recompute —: its batch, what the
    // loss's moment holds there (cost::shift_head keeps such a step's peak for another head), and
    // the bytes per sample of one rank's top block's recompute and backward, beside the d − 1
    // checkpointed blocks below it (as measured alone). Else 0: the recompute is composed.
    int64_t recompute_read_at = 0;
    double recompute_read_loss_bytes = 0;
    double recompute_act = 0;
    double recompute_at0 = 0;  // and its bytes whatever the batch, where the one-sample step says
    // The least peak (1 sample, all checkpointed) over the parameters' state (a block's bytes a
    // parameter), not the state fitted outside the blocks: that holds a head's buffer too.
    double least_ratio = 1;
    // By batch, how far each peak of the deep variant without checkpointing (above its one-sample
    // peak) lies above the fitted line (negative: below): where the peak's curve bends, the line
    // passes under the measured points between the bends, or over those before a head's buffer
    // stops growing.
    std::vector<std::pair<double, double>> deep_bend;
    CommLine block_all_reduce, outside_all_reduce, block_all_gather, outside_all_gather;
    CommLine recompute_all_reduce;  // per checkpointed block
  };
  const Fit& fit() const { return fit_; }

  // One stage of a step, for composing and for the cut-point search (cost/cut_search.h): stage
  // `stage` of in.pp holding blocks [begin, end). Times unscaled by calibration (time_scale);
  // the peak scaled.
  struct StageCost {
    double compute = 0, recompute = 0, comm = 0, micro_batch_ms = 0;  // per micro-batch
    double optimizer = 0, tail = 0;  // once per step: the optimizer, + gradient all-reduces
    double params = 0, state = 0, activations = 0, logits = 0, inputs = 0, peak_bytes = 0;
    PeakMoment peak_at = PeakMoment::kLossBackward;
  };
  StageCost stage_cost(const PredictInput& in, int64_t stage, int64_t begin, int64_t end) const;
  // What a step costs besides its stages (the loss averaged over the world), unscaled.
  double step_overhead_ms(const PredictInput& in) const;
  // The calibration's factor on the time of `in`: a weighted mean of the measured trials' log
  // ratios (measured / predicted), each weighted by how near its configuration is to `in` —
  // micro-batch size, the share of blocks checkpointed, the layout — with the median ratio of all
  // of them as a prior of weight one. One trial rescales every prediction alike; more trials
  // correct their neighbours most (a CPU's error is not the same at 2 samples as at 64).
  double time_scale(const PredictInput& in) const;
  // Throws Error(kInvalidArgument) for a layout this predictor cannot compose (cuts aside), and
  // for checkpointed blocks when the profile has no checkpointed step (Fit::checkpointed).
  void check_layout(const PredictInput& in) const;
  // B(x) and E(x) + P(x): a block's and the rest's forward and backward of x samples.
  double block_ms(double samples) const;
  double outside_ms(double samples) const;

 private:
  Prediction raw(const PredictInput& in) const;
  // The least a rank of `state` bytes peaks at — in the optimizer step, whose temporaries are of
  // one parameter at a time: what its parameters hold (`param_state`: themselves, their gradients,
  // the optimizer's state) and the temporaries of its largest parameter (`largest` elements;
  // a pipeline stage holding the embedding needs them whole, whatever its share of the state).
  // The whole model on one rank (`whole`) no lower than its least peak profiled — one sample,
  // every block checkpointed — and, where that lies above the optimizer step (then a moment of
  // the backward), `in_flight` more: what the rank's other micro-batches in flight keep then. A
  // profile that measured no temporaries or counted no largest parameter: the least peak over the
  // parameters' state. `param_state`: the stage's parameters' state (Fit::least_ratio).
  struct LeastPeak {
    double bytes = 0;
    PeakMoment at = PeakMoment::kOptimizerStep;
  };
  LeastPeak least_peak(double param_state, double largest, bool whole, double in_flight = 0) const;
  // A parameter's bytes of state (itself, its gradient, the optimizer's), read off the blocks
  // (0: a profile of no block parameters).
  double state_per_param() const;

  Profile profile_;
  std::optional<CollectiveModel> collectives_;
  Fit fit_;
  struct Observed {
    PredictInput in;
    double log_ratio;
  };
  std::vector<Observed> observed_;
  double memory_scale_ = 1;
};

}  // namespace slapo::cost
