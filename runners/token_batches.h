#pragma once
// The token batches a trial trains on: consecutive windows of the workload's data file, or seeded
// random tokens when it has none. The profiler builds them too (runners/profile_shape.cc), to
// measure the bytes they hold beside the model — a trial's peak counts them (cost::ModelShape's
// input bytes).

#include <cstdint>

#include <torch/types.h>

#include "models/model_spec.h"
#include "models/training_batch.h"
#include "runners/workload.h"

namespace slapo::runners {

class TokenBatches {
 public:
  // Reads the data file, if any (its tokens held as int64 for the whole run), and seeds the
  // random tokens otherwise. Throws Error naming the file when it cannot be read, holds fewer
  // tokens than one batch, or holds ids outside the vocabulary.
  TokenBatches(const Workload& w, const models::ModelSpec& spec, int64_t batch, int64_t seq);

  // Inputs and targets: a window of seq + 1 tokens per sample, as the family learns from it.
  models::TrainingBatch next();

 private:
  // The next [batch, seq + 1] tokens: random, or the data's next span (wrapping around).
  torch::Tensor window();

  models::ModelSpec spec_;
  int64_t batch_, seq_;
  torch::Tensor data_;
  int64_t offset_ = 0;
};

}  // namespace slapo::runners
