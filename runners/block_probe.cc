#include "runners/block_probe.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "dist/world.h"
#include "runners/parallel_trainer.h"
#include "runners/tracking_allocator.h"
#include "schedule/kernels/dropout_key.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

// Timed rounds per batch when the batches are too few for the line through them to ignore a wild
// round on its own (runners/block_probe.h); one round per batch from kBatchesForOneRound batches.
constexpr int kRounds = 3;
constexpr size_t kBatchesForOneRound = 4;

// One key's block on a one-block model, and its inputs at the current batch.
class ProbedBlock {
 public:
  ProbedBlock(const Workload& w, const Config& knobs, bool checkpointed) {
    models::ModelSpec spec = w.spec();
    spec.layers = 1;
    Config c = knobs;
    c.set("ckpt_layers", Value(int64_t{checkpointed ? 1 : 0}));
    try {
      trainer_ = std::make_unique<ParallelTrainer>(
          TrainerSetup{spec, w.schedule_template(), c, w.seed, w.optimizer, w.lr, {}},
          dist::local_groups());
    } catch (const Error& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, "probing the block of ", knobs.to_string(), ": ", e.what());
    }
    try {
      pipelined_ = &schedule::as_pipelined(trainer_->model());
      body_ = &schedule::body_of(trainer_->model());
    } catch (const Error& e) {
      SLAPO_FAIL(ErrorCode::kRuntime, "probing the block of ", knobs.to_string(), ": ", e.what());
    }
    vocab_ = spec.vocab;
    seq_ = w.seq_len_for(knobs);
  }

  // The embeddings' output of `batch` samples (the same tokens for every key: one seed), as the
  // block receives it in a step, and the gradient its output gets.
  void set_batch(int64_t batch) {
    torch::manual_seed(static_cast<uint64_t>(batch));
    const torch::Tensor tokens = torch::randint(vocab_, {batch, seq_}, torch::kLong);
    torch::NoGradGuard no_grad;
    inputs_ = pipelined_->prologue_values(tokens);
    inputs_[0] = inputs_[0].detach().requires_grad_(true);
    output_grad_ = torch::randn_like(inputs_[0]);
  }

  // Forward and backward once: the milliseconds, and the bytes kept and needed above them.
  struct Run {
    double ms = 0, kept_bytes = 0, transient_bytes = 0;
  };
  Run run(uint64_t step) {
    TrackingAllocator& memory = TrackingAllocator::instance();
    const double before = static_cast<double>(memory.live_bytes());
    memory.reset_peak();
    const auto start = Clock::now();
    Run r;
    {
      schedule::DropoutScope scope(step, 0);
      const schedule::Values y = body_->forward_values(inputs_, 0, 1);
      r.kept_bytes = static_cast<double>(memory.live_bytes()) - before;
      torch::autograd::backward({y.at(0)}, {output_grad_});
    }
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    r.transient_bytes = static_cast<double>(memory.peak_bytes()) - before - r.kept_bytes;
    return r;
  }

 private:
  std::unique_ptr<ParallelTrainer> trainer_;
  schedule::Pipelined* pipelined_ = nullptr;
  schedule::SequenceImpl* body_ = nullptr;
  int64_t vocab_ = 0, seq_ = 0;
  schedule::Values inputs_;
  torch::Tensor output_grad_;
};

// Both keys' blocks once at `batch`: the first to run alternates with `round` (a step right after
// another may run warmer). Returns the difference of `other` from `base`.
cost::BlockDifference run_pair(ProbedBlock& base, ProbedBlock& other, int64_t batch,
                               bool checkpointed, int round) {
  ProbedBlock::Run a, b;
  if (round % 2 == 0) {
    a = base.run(round);
    b = other.run(round);
  } else {
    b = other.run(round);
    a = base.run(round);
  }
  cost::BlockDifference d;
  d.batch = batch;
  d.checkpointed = checkpointed;
  d.ms = b.ms - a.ms;
  d.kept_bytes = b.kept_bytes - a.kept_bytes;
  d.transient_bytes = b.transient_bytes - a.transient_bytes;
  return d;
}

// The differences at each of `batches` (ascending), the keys warmed up once at the first: a time
// difference per batch off the repeated-median line through every round's (runners/block_probe.h),
// the bytes as measured (exact, the same every round).
std::vector<cost::BlockDifference> differences_at(ProbedBlock& base, ProbedBlock& other,
                                                  const std::vector<int64_t>& batches,
                                                  bool checkpointed) {
  const int rounds = batches.size() >= kBatchesForOneRound ? 1 : kRounds;
  std::vector<cost::BlockDifference> out;
  std::vector<double> x, y;
  int round = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    base.set_batch(batches[i]);
    other.set_batch(batches[i]);
    if (i == 0) run_pair(base, other, batches[i], checkpointed, round++);
    cost::BlockDifference d;
    for (int r = 0; r < rounds; ++r) {
      d = run_pair(base, other, batches[i], checkpointed, round++);
      x.push_back(static_cast<double>(batches[i]));
      y.push_back(d.ms);
    }
    out.push_back(d);  // its bytes: any round's
  }
  const Line line = repeated_median_line(x, y);
  for (cost::BlockDifference& d : out) d.ms = line.at(static_cast<double>(d.batch));
  return out;
}

}  // namespace

std::vector<cost::BlockDifference> probe_block_differences(const Workload& workload,
                                                           const Config& base_knobs,
                                                           const Config& knobs,
                                                           const std::vector<int64_t>& batches,
                                                           int64_t checkpointed_batch) {
  TrackingAllocator::instance();  // installed before any tensor of the probe
  std::vector<cost::BlockDifference> out;
  {
    ProbedBlock base(workload, base_knobs, false), other(workload, knobs, false);
    std::vector<int64_t> ascending = batches;
    std::sort(ascending.begin(), ascending.end());
    ascending.erase(std::unique(ascending.begin(), ascending.end()), ascending.end());
    out = differences_at(base, other, ascending, false);
  }
  if (checkpointed_batch > 0) {
    ProbedBlock base(workload, base_knobs, true), other(workload, knobs, true);
    for (const cost::BlockDifference& d : differences_at(base, other, {checkpointed_batch}, true))
      out.push_back(d);
  }
  return out;
}

}  // namespace slapo::runners
