#pragma once
// Predictor: the step time and peak tensor memory of a configuration, from a Profile, composed the
// way the single-process runtime executes a step:
//
//   time(b, n)   = fixed + compute(b) + n · b · recompute      (n checkpointed blocks, b samples)
//   memory(b, n) = state + max(kept(b, n), floor(b))
//     kept(b, n) = (b / m) · (act − n · saved)    activations of one micro-batch of b / m samples
//     floor(b)   = (b / m) · act_all_ckpt         every block checkpointed: their inputs, and the
//                                                 recompute of one block in backward
//
// fixed + compute is the affine fit of the profile's steps without checkpointing; `recompute`
// (time per sample per checkpointed block) and `saved` (bytes per sample per checkpointed block)
// come from its checkpointed points; `state` is the parameters, gradients and optimizer state (the
// intercept of the memory fit). Measurements correct the model (calibrate): a measured trial
// rescales the prediction of its neighbours. Blind spots (docs/cost-model.md): one rank only (tp,
// pp, dp > 1 are refused, not guessed); a time that is not affine in the batch between the
// profiled batches; per-micro-batch overheads.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cost/profile.h"

namespace slapo::cost {

// What a prediction needs of a configuration.
struct PredictInput {
  int64_t batch = 1;
  int64_t ckpt_blocks = 0;
  int64_t micro_batches = 1;
};

struct Prediction {
  double step_ms = 0;
  double peak_bytes = 0;
  double samples_per_s = 0;
  // name → milliseconds: "fixed" (optimizer step, per-step overheads), "compute" (forward and
  // backward), "recompute" (checkpointed blocks' forward again).
  std::vector<std::pair<std::string, double>> time_ms;
  // name → bytes: "state" (parameters, gradients, optimizer state), "activations".
  std::vector<std::pair<std::string, double>> memory_bytes;

  // {"step_ms", "peak_bytes", "samples_per_s", "time_ms": {...}, "memory_bytes": {...}}
  std::string to_json() const;
};

class Predictor {
 public:
  // Fits the model. Throws Error(kInvalidArgument) when the profile lacks what the model needs:
  // two batch sizes without checkpointing, and checkpointed points.
  explicit Predictor(Profile profile);

  Prediction predict(const PredictInput& in) const;

  // A measured trial of `in`: later predictions are rescaled by the median of measured / predicted
  // (time) and the largest of them (memory: an under-prediction is a trial run into out of memory).
  void calibrate(const PredictInput& in, double step_ms, double peak_bytes);
  // A trial of `in` that ran out of memory under `budget_bytes`: memory predictions are raised so
  // that it is predicted over the budget.
  void calibrate_oom(const PredictInput& in, double budget_bytes);

  const Profile& profile() const { return profile_; }

  // The fitted coefficients (for tests and docs/cost-model.md).
  struct Fit {
    double fixed_ms = 0, compute_ms_per_sample = 0, recompute_ms_per_sample_block = 0;
    double state_bytes = 0, act_bytes_per_sample = 0, saved_bytes_per_sample_block = 0,
           floor_bytes_per_sample = 0;
  };
  const Fit& fit() const { return fit_; }

 private:
  Prediction raw(const PredictInput& in) const;

  Profile profile_;
  Fit fit_;
  std::vector<double> time_ratios_;
  double memory_scale_ = 1;
};

}  // namespace slapo::cost
