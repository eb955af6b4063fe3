#pragma once
// Predictor: the step time and peak tensor memory of a configuration, from a Profile, composed the
// way the single-process runtime executes a step — m micro-batches of b / m samples one after the
// other, n blocks checkpointed:
//
//   time(b, n, m)   = m · T(b / m) · (1 + n · ρ)
//     T(x)          the step time of x samples without checkpointing: piecewise linear through the
//                   profiled batches (a CPU's time per sample is not constant in the batch)
//     ρ             the share of a step one checkpointed block adds (its forward runs twice)
//   memory(b, n, m) = max(state + max(kept, floor), least)
//     kept          = (b / m) · (act − n · saved)   activations of one micro-batch
//     floor         = (b / m) · act_all             every block checkpointed: the blocks' inputs
//                                                   and one block recomputed in backward
//     least         the profiled peak with the least activations (1 sample, every block
//                   checkpointed): what the optimizer step and the rest need at the least
//
// `state` (parameters, gradients, optimizer state) and `act` are the affine fit of the peak over
// the profiled batches (tensor memory is linear in the batch); `saved` and `act_all` come from the
// checkpointed points. Measurements correct the model (calibrate). Blind spots
// (docs/cost-model.md): one rank only (tp, pp, dp > 1 are refused, not guessed).

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
  // name → milliseconds: "compute" (forward, backward and the optimizer step of every
  // micro-batch), "recompute" (checkpointed blocks' forward again).
  std::vector<std::pair<std::string, double>> time_ms;
  // name → bytes: "state" (parameters, gradients, optimizer state), "activations".
  std::vector<std::pair<std::string, double>> memory_bytes;

  // {"step_ms", "peak_bytes", "samples_per_s", "time_ms": {...}, "memory_bytes": {...}}
  std::string to_json() const;
};

class Predictor {
 public:
  // Fits the model. Throws Error(kInvalidArgument) when the profile lacks what the model needs:
  // two batch sizes without checkpointing, and a point with every block checkpointed.
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
    std::vector<std::pair<double, double>> step_ms_by_batch;  // T: (batch, ms), ascending
    double recompute_share_per_block = 0;                     // ρ
    double state_bytes = 0, act_bytes_per_sample = 0, saved_bytes_per_sample_block = 0,
           floor_bytes_per_sample = 0, least_bytes = 0;
  };
  // T(x): the step time of x samples without checkpointing.
  double step_ms_without_checkpointing(double samples) const;
  const Fit& fit() const { return fit_; }

 private:
  Prediction raw(const PredictInput& in) const;

  Profile profile_;
  Fit fit_;
  std::vector<double> time_ratios_;
  double memory_scale_ = 1;
};

}  // namespace slapo::cost
