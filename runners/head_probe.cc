#include "runners/head_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "cost/fit.h"
#include "dist/world.h"
#include "models/training_batch.h"
#include "runners/parallel_trainer.h"
#include "runners/tracking_allocator.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

// Timed rounds per batch: the first key to step at a larger batch pays for the memory it touches
// first (a few per cent at gpt-mini's shapes); two rounds, each key first in one, cancel it.
constexpr int kRounds = 2;

// One key's one-block model in `micro` GPipe micro-batches, stepped as the profiler steps it.
class SteppedModel {
 public:
  SteppedModel(const Workload& w, const Config& knobs, int64_t micro) : knobs_(knobs) {
    spec_ = w.spec();
    spec_.layers = 1;
    Config c = knobs;
    c.set("ckpt_layers", Value(int64_t{0}));
    if (micro > 1) {
      c.set("micro_batches", Value(micro));
      c.set("pipeline_schedule", Value(std::string("gpipe")));
    }
    TrackingAllocator& memory = TrackingAllocator::instance();
    const double before = static_cast<double>(memory.live_bytes());
    try {
      trainer_ = std::make_unique<ParallelTrainer>(
          TrainerSetup{spec_, w.schedule_template(), c, w.seed, w.optimizer, w.lr, {}},
          dist::local_groups());
    } catch (const std::exception& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, "probing the head of ", knobs.to_string(), ": ", e.what());
    }
    held_ = static_cast<double>(memory.live_bytes()) - before;
    for (const auto& p : trainer_->model().parameters()) params_ += static_cast<double>(p.numel());
  }

  double params() const { return params_; }

  // One training step on `batch` (the same tensors for every key): its milliseconds and its peak
  // — what this model holds between steps (parameters, gradients, optimizer state, counted as
  // they appear) plus what its step needs above everything live before it.
  struct Run {
    double ms = 0, peak_bytes = 0;
  };
  Run step(const models::TrainingBatch& batch) {
    TrackingAllocator& memory = TrackingAllocator::instance();
    const double before = static_cast<double>(memory.live_bytes());
    memory.reset_peak();
    const auto start = Clock::now();
    double loss = NAN;
    try {
      loss = trainer_->step(batch.inputs, batch.targets, steps_++);
    } catch (const std::exception& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, "probing the head of ", knobs_.to_string(), ": ", e.what());
    }
    Run r;
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    SLAPO_CHECK(std::isfinite(loss), ErrorCode::kRuntime, "probing the head of ",
                knobs_.to_string(), ": non-finite loss ", loss);
    r.peak_bytes = static_cast<double>(memory.peak_bytes()) - before + held_;
    held_ += static_cast<double>(memory.live_bytes()) - before;
    return r;
  }

 private:
  Config knobs_;
  models::ModelSpec spec_;
  std::unique_ptr<ParallelTrainer> trainer_;
  double held_ = 0, params_ = 0;
  uint64_t steps_ = 0;
};

// The tokens of `batch` samples, the same for both keys (one seed per batch).
models::TrainingBatch batch_of(const Workload& w, const Config& knobs, int64_t batch) {
  const models::ModelSpec spec = w.spec();
  torch::manual_seed(static_cast<uint64_t>(batch));
  return models::training_batch(
      spec, torch::randint(spec.vocab, {batch, w.seq_len_for(knobs) + 1}, torch::kLong));
}

}  // namespace

std::vector<cost::HeadDifference> probe_head_differences(const Workload& workload,
                                                         const Config& base_knobs,
                                                         const Config& knobs,
                                                         const cost::Profile& base,
                                                         double* epilogue_params) {
  std::map<int64_t, std::vector<int64_t>> batches;  // by micro-batches, ascending
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers == 1 && q.ckpt_blocks == 0 && !q.derived)
      batches[q.micro_batches].push_back(q.batch);
  }
  SLAPO_CHECK(batches.count(1), ErrorCode::kInvalidArgument,
              "probing the head: the base profile has no measured one-block step");
  for (auto& [micro, b] : batches) {
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
  }
  TrackingAllocator::instance();  // installed before any tensor of the probe
  std::vector<cost::HeadDifference> out;
  std::map<int64_t, double> one_ms;  // the time difference of one micro-batch, by batch
  for (const auto& [micro, at] : batches) {
    SteppedModel a(workload, base_knobs, micro), b(workload, knobs, micro);
    if (micro == 1 && epilogue_params) *epilogue_params = b.params() - a.params();
    // Warmed up once, at the smallest batch a step takes: a model's first step runs slower (its
    // optimizer's state, the thread pools). A first step at a larger batch pays for the memory it
    // touches first, a few per cent: the rounds' order cancels it (kRounds).
    const models::TrainingBatch warm = batch_of(workload, knobs, micro);
    a.step(warm);
    b.step(warm);
    for (int64_t batch : at) {
      const models::TrainingBatch tokens = batch_of(workload, knobs, batch);
      cost::HeadDifference d;
      d.batch = batch;
      d.layers = 1;
      d.micro_batches = micro;
      std::vector<double> ms;
      const int rounds = micro == 1 ? kRounds : 1;
      for (int r = 0; r < rounds; ++r) {
        SteppedModel::Run ra, rb;
        if (r % 2 == 0) {
          ra = a.step(tokens);
          rb = b.step(tokens);
        } else {
          rb = b.step(tokens);
          ra = a.step(tokens);
        }
        ms.push_back(rb.ms - ra.ms);
        d.peak_bytes = rb.peak_bytes - ra.peak_bytes;  // exact: any round's
      }
      d.ms = median(ms);
      if (micro == 1) one_ms[batch] = d.ms;
      out.push_back(d);
    }
  }
  // Several micro-batches: the head runs once per micro-batch, of batch / micro samples — the
  // difference of one micro-batch there, that many times (measured at that batch, or along the
  // line through the measured ones).
  std::vector<std::pair<double, double>> line(one_ms.begin(), one_ms.end());
  for (cost::HeadDifference& d : out) {
    if (d.micro_batches == 1) continue;
    const double x = static_cast<double>(d.batch) / static_cast<double>(d.micro_batches);
    const double per_micro = line.size() == 1 ? line.front().second : cost::polyline_at(line, x);
    // The optimizer steps once: its difference (over parameters the head has more) once.
    const double optimizer_ms =
        base.optimizer_ms_per_param * (epilogue_params ? *epilogue_params : 0);
    d.ms = static_cast<double>(d.micro_batches) * per_micro -
           static_cast<double>(d.micro_batches - 1) * optimizer_ms;
  }
  return out;
}

}  // namespace slapo::runners
