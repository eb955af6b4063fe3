#include "runners/block_probe.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "models/templates.h"
#include "runners/parallel_trainer.h"
#include "runners/simulated_group.h"
#include "runners/sweep_steps.h"
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
      // Under tensor parallelism, one rank of the group, alone (runners/simulated_group.h).
      const int tp =
          models::parse_template_config(w.schedule_template(), spec, knobs).parallel.layout.tp;
      trainer_ = std::make_unique<ParallelTrainer>(
          TrainerSetup{spec, w.schedule_template(), c, w.seed, w.optimizer, w.lr, {}},
          simulated_groups(tp, &group_));
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
    const std::string block0 = spec.traits().blocks + ".0.";
    for (const auto& p : trainer_->model().named_parameters()) {
      if (p.key().rfind(block0, 0) == 0) params_ += static_cast<double>(p.value().numel());
    }
    // A block without parameters is a name that does not match: never a silent zero difference.
    SLAPO_CHECK(params_ > 0, ErrorCode::kRuntime, "probing the block of ", knobs.to_string(),
                ": no parameters under '", block0, "'");
  }

  // The parameters of the block, as the schedule built it.
  double params() const { return params_; }

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

  // Forward and backward once: the milliseconds of both and of the forward alone, and the bytes
  // kept and needed above them.
  struct Run {
    double ms = 0, forward_ms = 0, kept_bytes = 0, transient_bytes = 0;
    cost::CollectiveTally collectives, forward_collectives;
  };
  Run run(uint64_t step) {
    TrackingAllocator& memory = TrackingAllocator::instance();
    const double before = static_cast<double>(memory.live_bytes());
    memory.reset_peak();
    if (group_) group_->reset_tally();
    const auto start = Clock::now();
    Run r;
    {
      schedule::DropoutScope scope(step, 0);
      const schedule::Values y = body_->forward_values(inputs_, 0, 1);
      r.forward_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      r.kept_bytes = static_cast<double>(memory.live_bytes()) - before;
      if (group_) r.forward_collectives = group_->tally();
      torch::autograd::backward({y.at(0)}, {output_grad_});
    }
    r.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    r.transient_bytes = static_cast<double>(memory.peak_bytes()) - before - r.kept_bytes;
    if (group_) r.collectives = group_->tally();
    return r;
  }

 private:
  std::shared_ptr<SimulatedGroup> group_;  // tp > 1 only
  std::unique_ptr<ParallelTrainer> trainer_;
  schedule::Pipelined* pipelined_ = nullptr;
  schedule::SequenceImpl* body_ = nullptr;
  int64_t vocab_ = 0, seq_ = 0;
  double params_ = 0;
  schedule::Values inputs_;
  torch::Tensor output_grad_;
};

// Every key's block once at `batch`, the base's first in even rounds and last in odd ones (a run
// right after another may run warmer). Returns each other key's difference from the base.
std::vector<cost::BlockDifference> run_round(ProbedBlock& base,
                                             std::vector<std::unique_ptr<ProbedBlock>>& others,
                                             int64_t batch, bool checkpointed, int round) {
  std::vector<ProbedBlock::Run> runs(others.size());
  ProbedBlock::Run a;
  if (round % 2 == 0) {
    a = base.run(round);
    for (size_t i = 0; i < others.size(); ++i) runs[i] = others[i]->run(round);
  } else {
    for (size_t i = others.size(); i-- > 0;) runs[i] = others[i]->run(round);
    a = base.run(round);
  }
  std::vector<cost::BlockDifference> out(others.size());
  for (size_t i = 0; i < others.size(); ++i) {
    cost::BlockDifference& d = out[i];
    d.batch = batch;
    d.checkpointed = checkpointed;
    d.params = others[i]->params() - base.params();
    d.ms = runs[i].ms - a.ms;
    d.forward_ms = runs[i].forward_ms - a.forward_ms;
    d.kept_bytes = runs[i].kept_bytes - a.kept_bytes;
    d.transient_bytes = runs[i].transient_bytes - a.transient_bytes;
    d.collectives = runs[i].collectives - a.collectives;
    d.forward_collectives = runs[i].forward_collectives - a.forward_collectives;
  }
  return out;
}

// Each other key's differences at each of `batches` (in the order given, the largest first), every
// block run once untimed at the first — the memory every later run reuses touched then: the time
// differences off the repeated-median lines through every round's (runners/block_probe.h), the
// bytes as measured (exact, the same every round).
std::vector<std::vector<cost::BlockDifference>> differences_at(
    ProbedBlock& base, std::vector<std::unique_ptr<ProbedBlock>>& others,
    const std::vector<int64_t>& batches, bool checkpointed) {
  std::vector<std::vector<cost::BlockDifference>> out(others.size());
  std::vector<double> x;
  std::vector<std::vector<double>> ms(others.size()), forward_ms(others.size());
  int round = 0;
  int rounds = batches.size() >= kBatchesForOneRound ? 1 : kRounds;
  for (size_t b = 0; b < batches.size(); ++b) {
    base.set_batch(batches[b]);
    for (auto& other : others) other->set_batch(batches[b]);
    if (b == 0) {
      // The warm-up, untimed — every key's: a block's first run pays what its later ones do not
      // (bert-tiny's memory_efficient block, 9 ms against 1). Then as many rounds as add up to
      // enough time for blocks of a few milliseconds (runners/sweep_steps.h).
      base.run(round);
      for (auto& other : others) other->run(round);
      const double block_ms = base.run(round).ms;
      rounds = timed_repeats(block_ms * static_cast<double>(batches.size()), rounds);
    }
    std::vector<cost::BlockDifference> d;
    for (int r = 0; r < rounds; ++r) {
      d = run_round(base, others, batches[b], checkpointed, round++);
      x.push_back(static_cast<double>(batches[b]));
      for (size_t i = 0; i < others.size(); ++i) {
        ms[i].push_back(d[i].ms);
        forward_ms[i].push_back(d[i].forward_ms);
      }
    }
    for (size_t i = 0; i < others.size(); ++i) out[i].push_back(d[i]);  // its bytes: any round's
  }
  for (size_t i = 0; i < others.size(); ++i) {
    const Line line = repeated_median_line(x, ms[i]);
    const Line forward = repeated_median_line(x, forward_ms[i]);
    for (cost::BlockDifference& d : out[i]) {
      d.ms = line.at(static_cast<double>(d.batch));
      d.forward_ms = forward.at(static_cast<double>(d.batch));
    }
  }
  return out;
}

// The block of each of `knobs`, plain or checkpointed.
std::vector<std::unique_ptr<ProbedBlock>> blocks_of(const Workload& workload,
                                                    const std::vector<Config>& knobs,
                                                    bool checkpointed) {
  std::vector<std::unique_ptr<ProbedBlock>> out;
  for (const Config& k : knobs)
    out.push_back(std::make_unique<ProbedBlock>(workload, k, checkpointed));
  return out;
}

}  // namespace

std::vector<std::vector<cost::BlockDifference>> probe_block_differences(
    const Workload& workload, const Config& base_knobs, const std::vector<Config>& knobs,
    const std::vector<int64_t>& batches, int64_t checkpointed_batch) {
  TrackingAllocator::instance();  // installed before any tensor of the probe
  // The blocks run on a heap given back to the system first: what the base's deep steps left
  // allocated but free in this process (hundreds of MB after its largest batch) made the probe
  // rank table 1's attention variants the wrong way — `auto` to a tie at 4, 2, never, 1, 2, never,
  // never, never, 2, never, 1, 2 trials over twelve fresh draws; with it, 1 1 1 1 never 2 1 1 1
  // over nine; the probe in a process of its own, 1 in six of six (docs/benchmarks.md). Measured,
  // not explained; not done before the base's own steps, whose larger batches it made slower
  // (table 4: to a tie at 7 in four draws of six). glibc only.
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  std::vector<std::vector<cost::BlockDifference>> out;
  {
    ProbedBlock base(workload, base_knobs, false);
    std::vector<std::unique_ptr<ProbedBlock>> others = blocks_of(workload, knobs, false);
    // The largest batch first (runners/block_probe.h): every block then runs on memory touched
    // before; the differences are returned ascending.
    std::vector<int64_t> descending = batches;
    std::sort(descending.begin(), descending.end(), std::greater<>());
    descending.erase(std::unique(descending.begin(), descending.end()), descending.end());
    out = differences_at(base, others, descending, false);
    for (std::vector<cost::BlockDifference>& key : out) std::reverse(key.begin(), key.end());
  }
  if (checkpointed_batch > 0) {
    ProbedBlock base(workload, base_knobs, true);
    std::vector<std::unique_ptr<ProbedBlock>> others = blocks_of(workload, knobs, true);
    const auto checkpointed = differences_at(base, others, {checkpointed_batch}, true);
    for (size_t i = 0; i < knobs.size(); ++i) out[i].push_back(checkpointed[i].front());
  }
  return out;
}

cost::BlockBytes measure_block_bytes(const Workload& workload, const Config& knobs, int64_t lo,
                                     int64_t hi, bool checkpointed) {
  SLAPO_CHECK(lo > 0 && lo < hi, ErrorCode::kInvalidArgument, "measuring a block alone: batches ",
              lo, " and ", hi, " are not two");
  TrackingAllocator::instance();  // installed before any tensor of the probe
  ProbedBlock block(workload, knobs, false);
  auto run_at = [&](int64_t batch) {
    block.set_batch(batch);
    block.run(0);
    return block.run(1);
  };
  const ProbedBlock::Run a = run_at(lo), b = run_at(hi);
  const double span = static_cast<double>(hi - lo), x = static_cast<double>(lo);
  cost::BlockBytes out;
  out.measured = true;
  out.kept_per_sample = (b.kept_bytes - a.kept_bytes) / span;
  out.kept_at0 = a.kept_bytes - out.kept_per_sample * x;
  out.backward_per_sample = (b.transient_bytes - a.transient_bytes) / span;
  out.backward_at0 = a.transient_bytes - out.backward_per_sample * x;
  if (checkpointed) measure_checkpointed_block_bytes(workload, knobs, lo, hi, out);
  return out;
}

void measure_checkpointed_block_bytes(const Workload& workload, const Config& knobs, int64_t lo,
                                      int64_t hi, cost::BlockBytes& bytes) {
  SLAPO_CHECK(lo > 0 && lo < hi, ErrorCode::kInvalidArgument,
              "measuring a checkpointed block alone: batches ", lo, " and ", hi, " are not two");
  TrackingAllocator::instance();
  // Its forward keeps its output and what the checkpoint holds (the input is the probe's, made
  // before): what a checkpointed block adds to a step's chain of them.
  ProbedBlock block(workload, knobs, true);
  auto kept_at = [&](int64_t batch) {
    block.set_batch(batch);
    block.run(0);
    return block.run(1).kept_bytes;
  };
  const double at_lo = kept_at(lo), at_hi = kept_at(hi);
  bytes.checkpointed_measured = true;
  bytes.ckpt_kept_per_sample = (at_hi - at_lo) / static_cast<double>(hi - lo);
  bytes.ckpt_kept_at0 = at_lo - bytes.ckpt_kept_per_sample * static_cast<double>(lo);
}

}  // namespace slapo::runners
