#include "runners/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include <cstdio>
#include <cstdlib>
#include <ostream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"
#include "core/text.h"
#include "cost/derived_profile.h"
#include "cost/head_difference.h"
#include "cost/optimizer_swap.h"
#include "cost/profile_batches.h"
#include "dist/launcher.h"
#include "dist/world.h"
#include "models/fused_lm_head.h"
#include "models/template_config.h"
#include "models/templates.h"
#include "models/training_batch.h"
#include "models/zoo.h"
#include "runners/block_probe.h"
#include "runners/collective_profile.h"
#include "runners/heap_policy.h"
#include "runners/machine_memory.h"
#include "runners/parallel_trainer.h"
#include "runners/simulated_group.h"
#include "runners/sweep_steps.h"
#include "runners/token_batches.h"
#include "runners/tracking_allocator.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/kernels/fused_lm_loss.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

// A step of the profile's smallest batches shorter than this is timed twice (measure_profiles).
constexpr double kShortStepMs = 300;

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> ms;
  f();  // warm-up
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

int64_t numel(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  int64_t n = 0;
  for (const auto& [name, t] : params) n += t.numel();
  return n;
}

// The bytes a step's token batch holds beside the model (cost::ModelShape's input bytes), read
// off the tracking allocator at one and two samples: a trial's batches (runners/token_batches.h:
// the data file's tokens, held whole, and each sample's window), and the profile's own steps'
// (random windows, as measure_sweep makes them).
void measure_input_bytes(const Workload& w, const models::ModelSpec& spec, int64_t seq,
                         cost::ModelShape& shape) {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const auto live = [&] { return static_cast<double>(tracker.live_bytes()); };
  double trial[2] = {0, 0}, profiled[2] = {0, 0};
  for (int64_t samples : {1, 2}) {
    double before = live();
    {
      TokenBatches batches(w, spec, samples, seq);
      const models::TrainingBatch held = batches.next();
      trial[samples - 1] = live() - before;
    }
    before = live();
    {
      const models::TrainingBatch held = models::training_batch(
          spec, torch::randint(spec.vocab, {samples, seq + 1}, torch::kLong));
      profiled[samples - 1] = live() - before;
    }
  }
  shape.input_bytes_per_sample = trial[1] - trial[0];
  shape.input_bytes_at0 = trial[0] - shape.input_bytes_per_sample;
  shape.profiled_input_bytes_per_sample = profiled[1] - profiled[0];
}

// The parameters of a block, of the prologue and of the epilogue, and the tied ones, as the
// schedule shards them: a two-block variant cut into two stages.
cost::ModelShape model_shape(const Workload& w, const Config& knobs, int tp) {
  models::ModelSpec spec = w.spec();
  spec.layers = 2;
  std::shared_ptr<SimulatedGroup> group;
  ParallelTrainer trainer({spec, w.schedule_template(), knobs, w.seed, w.optimizer, w.lr, {}},
                          simulated_groups(tp, &group));
  schedule::StagePlan plan;
  plan.stages = 2;
  plan.blocks = {{0, 1}, {1, 2}};
  const auto first = schedule::stage_parameters(trainer.model(), plan, 0);
  const auto last = schedule::stage_parameters(trainer.model(), plan, 1);
  const std::string block0 = spec.traits().blocks + ".0.", block1 = spec.traits().blocks + ".1.";
  int64_t block = 0;
  cost::ModelShape shape;
  for (const auto& [name, t] : first) {
    const double n = static_cast<double>(t.numel());
    if (name.rfind(block0, 0) == 0) {
      block += t.numel();
      shape.largest_block_tensor = std::max(shape.largest_block_tensor, n);
    } else {
      shape.largest_prologue_tensor = std::max(shape.largest_prologue_tensor, n);
    }
  }
  for (const auto& [name, t] : last) {
    if (name.rfind(block1, 0) != 0)
      shape.largest_epilogue_tensor =
          std::max(shape.largest_epilogue_tensor, static_cast<double>(t.numel()));
  }
  std::set<const c10::TensorImpl*> in_last;
  for (const auto& [name, t] : last) in_last.insert(t.unsafeGetTensorImpl());
  int64_t tied = 0;
  for (const auto& [name, t] : first) {
    if (in_last.count(t.unsafeGetTensorImpl())) tied += t.numel();
  }
  shape.block_params = static_cast<double>(block);
  shape.prologue_params = static_cast<double>(numel(first) - block);
  shape.epilogue_params = static_cast<double>(numel(last) - block);
  shape.tied_params = static_cast<double>(tied);
  shape.message_bytes_per_sample =
      static_cast<double>(w.seq_len_for(knobs) * spec.hidden) * sizeof(float);
  // The fused LM loss's chunk (its rank's rows of the vocabulary), in samples of the tokens the
  // loss reads: a sequence's, or a masked model's masked positions.
  for (const auto& module : trainer.model().modules()) {
    const auto* head = dynamic_cast<const models::FusedLmHeadImpl*>(module.get());
    if (head == nullptr) continue;
    const int64_t seq = w.seq_len_for(knobs);
    const int64_t tokens = spec.traits().masked_lm ? models::masked_positions(seq) : seq;
    const int64_t rows = head->named_parameters(/*recurse=*/false)["weight"].size(0);
    shape.loss_chunk_samples = static_cast<double>(schedule::default_chunk_tokens(rows)) /
                               static_cast<double>(std::max<int64_t>(1, tokens));
  }
  return shape;
}

// The bytes of temporaries one optimizer step makes per element of a parameter, measured on one
// flat tensor of `params` elements (its state allocated by a step before): AdamW's are of one
// parameter at a time, the largest a rank holds sets its least peak (cost/predictor.h). Its time
// is not read here: on one flat tensor of as many elements LibTorch's AdamW ran from 0.6 to 2.1
// times its time on a model's own parameters, by their shapes (benchmark/kernel_bench.cc,
// BM_AdamW: llama-mini 42.3 ms against 20.3, gpt2 549 against 883) — the profile times it within
// the model's steps (measure_sweep).
double optimizer_temp_bytes_per_element(const Workload& w, const models::TemplateConfig& tc,
                                        double params) {
  torch::Tensor p = torch::zeros({static_cast<int64_t>(params)}).requires_grad_();
  p.mutable_grad() = torch::full_like(p, 1e-3);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (w.optimizer == "sgd")
    optimizer = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{p},
                                                    torch::optim::SGDOptions(w.lr));
  else if (tc.fused_adamw)
    optimizer = std::make_unique<schedule::FusedAdamW>(std::vector<torch::Tensor>{p},
                                                       torch::optim::AdamWOptions(w.lr));
  else
    optimizer = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{p},
                                                      torch::optim::AdamWOptions(w.lr));
  optimizer->step();  // the state
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const size_t before = tracker.live_bytes();
  tracker.reset_peak();
  optimizer->step();
  return static_cast<double>(tracker.peak_bytes() - before) / params;
}

// The embeddings' forward and backward, per sample, at `batch` samples.
double prologue_ms_per_sample(const Workload& w, const Config& knobs, int64_t batch) {
  models::ModelSpec spec = w.spec();
  spec.layers = 1;
  auto model = models::build_model(spec, w.seed);
  auto* pipelined = dynamic_cast<schedule::Pipelined*>(model.get());
  if (!pipelined) return 0;
  const torch::Tensor tokens =
      torch::randint(spec.vocab, {batch, w.seq_len_for(knobs)}, torch::kLong);
  return median_ms(3,
                   [&] {
                     model->zero_grad();
                     pipelined->prologue(tokens).sum().backward();
                   }) /
         static_cast<double>(batch);
}

}  // namespace

namespace {

// How a sweep meets a batch larger than every step of its process before: that step faults in the
// pages of the memory it grows into, which a trial never times (its figure is the median of steps
// after two warm-ups).
enum class NewBatch {
  kAsItComes,    // timed as it comes
  kStepUntimed,  // one untimed step first
  kTouchHeap,    // the heap made resident first up to the peak expected there (expected_peak)
};

// SLAPO_PROFILE_TRACE set (and not "0"): each measured point printed to standard error as it is
// measured — its time, the page faults of its first timed step, its peak (docs/cost-model.md).
bool tracing() {
  const char* v = std::getenv("SLAPO_PROFILE_TRACE");
  return v && *v && std::string(v) != "0";
}

// Traced (tracing()): what each part of a profile took, from `since` on; `since` restarts.
void trace_part(const char* part, Clock::time_point& since) {
  const auto now = Clock::now();
  if (tracing())
    std::fprintf(stderr, "profile trace: %s took %.0f ms\n", part,
                 std::chrono::duration<double, std::milli>(now - since).count());
  since = now;
}

// While a profile measures and no budget holds this process, this machine's memory does
// (runners/machine_memory.h): past its ceiling a step throws out of memory and the profile fails
// with that reason, where the kernel's killer would have ended the process — the tuner's own, when
// it profiles on one rank (a space of gpt-mini at sequence 128 and batches up to 1024 without a
// budget: `slapo-tune plan` killed after two minutes, 24 GiB resident).
class MachineCeiling {
 public:
  MachineCeiling() {
    TrackingAllocator& tracker = TrackingAllocator::instance();
    if (tracker.budget() != 0) return;  // held already (a profile within a profile)
    const int ranks = dist::RankEnv::present() ? dist::RankEnv::from_env().world_size : 1;
    if (const std::optional<MachineMemory> machine = machine_memory(ranks)) {
      tracker.set_budget(tracker.live_bytes() + static_cast<size_t>(machine->tensor_ceiling()),
                         "out of " + machine->ceiling_reason());
      set_ = true;
    }
  }
  ~MachineCeiling() {
    if (set_) TrackingAllocator::instance().set_budget(0);
  }
  MachineCeiling(const MachineCeiling&) = delete;
  MachineCeiling& operator=(const MachineCeiling&) = delete;

 private:
  bool set_ = false;
};

// Where a sweep stopped short of its budget (Sweep::stopping_short_of_the_budget): the batch it
// did not measure, and why ("out of this machine's memory: past …").
struct StoppedShort {
  int64_t batch = 0;  // 0: it did not
  std::string why;
};

// One sweep of measure_sweep: a variant of the model — `depth` blocks, `ckpt` of them
// checkpointed, in `micro` GPipe micro-batches — stepped at each of `batches` in turn, and how its
// steps are timed (the setters, each named for what it changes from the default).
struct Sweep {
  Sweep(int64_t depth, int64_t ckpt, int64_t micro, std::vector<int64_t> batches)
      : depth(depth), ckpt(ckpt), micro(micro), batches(std::move(batches)) {}
  int64_t depth, ckpt, micro;
  std::vector<int64_t> batches;
  int64_t few = 0;  // batches up to it time two steps when the first is short
  NewBatch new_batch = NewBatch::kAsItComes;  // how a batch new to the process is met
  std::vector<PeakAt> known;  // the same variant's peaks an earlier process measured
  std::vector<double>* optimizer_ms = nullptr;  // each point's optimizer step appended here
  int64_t once_up_to = 0;                       // batches up to it timed once, whatever their step
  bool short_of_budget = false;     // a batch past the allocator's budget ends the sweep there
  StoppedShort* stopped = nullptr;  // where it did, and why (left as it was where it did not)

  // A batch whose step the allocator's budget (this machine's ceiling, in a profile) cannot hold
  // ends the sweep, its points those measured before: one whose peak the batches measured so far
  // expect past the budget is not stepped, and one that runs into it is not timed. Else such a
  // step fails the whole profile — and a key whose profile fails is predicted by nothing: a space
  // of gpt-mini at sequence 128, batches 4–1024, on a machine of 2 GiB failed its profile at 64
  // samples, and the tuner measured it blind (docs/cost-model.md, "Without a memory budget").
  Sweep& stopping_short_of_the_budget(StoppedShort* why = nullptr) {
    short_of_budget = true;
    stopped = why;
    return *this;
  }

  Sweep& two_steps_up_to(int64_t batch) {
    few = batch;
    return *this;
  }
  Sweep& meeting_new_batches(NewBatch how) {
    new_batch = how;
    return *this;
  }
  Sweep& knowing(std::vector<PeakAt> peaks) {
    known = std::move(peaks);
    return *this;
  }
  Sweep& adding_optimizer_ms_to(std::vector<double>* out) {
    optimizer_ms = out;
    return *this;
  }
  Sweep& timed_once_up_to(int64_t batch) {
    once_up_to = batch;
    return *this;
  }
};

// The sweep's variant, as one rank of a tensor-parallel group of `tp` (collectives counted),
// stepped at each of its batches in turn (runners/sweep_steps.h): one model, two warm-up steps at
// the smallest batch a step takes (`micro` samples), then one timed step at each batch — two at
// batches of at most `few` samples when the first is short (kShortStepMs), as many as add up to
// 60 ms when a step takes a few (timed_repeats) —, its peak read per batch. A batch new to the
// process is met as `new_batch` says. The one-block variant steps it untimed first (a step of it
// costs least, and that memory — the head's logits, mostly — is the largest share of its time:
// 20–33% at 4 samples of gpt-mini). The deep one touches the heap instead, up to the peak its
// steps measured so far (and `known`) expect there: its first step at 16 samples faulted 37k pages
// and ran −8 to +19% against the two after it, and an untimed step would cost about a third more
// profile (docs/cost-model.md). A larger batch needs no warm-up of its own otherwise — the
// optimizer's state, the thread pools exist by then — where a model and a warm-up step per point
// made gpt-mini's profile cost 12 s, not 7. With `optimizer_ms`, each point's optimizer step (the
// mean over its timed steps) is appended to it. Batches up to `once_up_to` are timed once: a step
// read for its bytes alone.
std::vector<cost::ProfilePoint> measure_sweep(const Workload& w, const Config& knobs, int tp,
                                              const Sweep& sweep) {
  const int64_t depth = sweep.depth, ckpt = sweep.ckpt, micro = sweep.micro;
  const std::vector<int64_t>& batches = sweep.batches;
  models::ModelSpec spec = w.spec();
  spec.layers = depth;
  Config c = knobs;
  c.set("batch_size", Value(batches.empty() ? micro : batches.front()));
  c.set("ckpt_layers", Value(ckpt));
  if (micro > 1) {
    c.set("micro_batches", Value(micro));
    c.set("pipeline_schedule", Value(std::string("gpipe")));
  }
  int64_t stepping = 0;  // the batch of the step that fails, for its message
  const auto failed = [&](const std::string& why) {
    return Error(ErrorCode::kRuntime,
                 "profiling " + (knobs.empty() ? std::string("the workload") : knobs.to_string()) +
                     " with " + std::to_string(depth) + " block(s), " + std::to_string(ckpt) +
                     " checkpointed" +
                     (micro > 1 ? ", in " + std::to_string(micro) + " micro-batches" : "") +
                     (stepping > 0 ? ", at " + std::to_string(stepping) + " samples" : "") +
                     " failed: " + first_line(why));
  };
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const double baseline = static_cast<double>(tracker.live_bytes());
  std::shared_ptr<SimulatedGroup> group;
  std::vector<cost::ProfilePoint> points;
  try {
    ParallelTrainer trainer({spec, w.schedule_template(), c, w.seed, w.optimizer, w.lr, {}},
                            simulated_groups(tp, &group));
    const int64_t seq = w.seq_len_for(knobs);
    torch::manual_seed(w.seed + 1);
    uint64_t step = 0;
    auto run = [&](int64_t batch) {
      stepping = batch;
      const models::TrainingBatch b =
          models::training_batch(spec, torch::randint(spec.vocab, {batch, seq + 1}, torch::kLong));
      const auto start = Clock::now();
      const double loss = trainer.step(b.inputs, b.targets, step++);
      if (!std::isfinite(loss)) throw failed("non-finite loss " + std::to_string(loss));
      return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    };
    std::vector<PeakAt> peaks = sweep.known;
    // Where the sweep stops short of its budget, the batch it stopped at, and why (the trace's).
    const auto stop_short = [&](int64_t batch, const std::string& why) {
      if (tracing()) {
        std::fprintf(stderr, "profile trace: %lld block(s) stop short of %lld samples: %s\n",
                     static_cast<long long>(depth), static_cast<long long>(batch), why.c_str());
      }
      if (sweep.stopped) *sweep.stopped = {batch, why};
    };
    for (const SweepStep& at :
         sweep_steps(micro, batches, sweep.new_batch == NewBatch::kStepUntimed)) {
      const int64_t batch = at.batch;
      if (sweep.short_of_budget && at.grows && tracker.budget() != 0) {
        const double expected = expected_peak(peaks, batch);
        if (expected > 0 && baseline + expected > static_cast<double>(tracker.budget())) {
          stop_short(batch, tracker.budget_why() + " (" + format_bytes(expected) + " expected)");
          break;
        }
      }
      try {
        if (!at.timed) {
          run(batch);
          continue;
        }
        // Where the peaks so far expect nothing of the step's growth, the touch below falls short:
        // a first step that faults its memory in is timed again (expects_growth,
        // runners/sweep_steps.h).
        const bool may_time_again =
            sweep.new_batch == NewBatch::kTouchHeap && at.grows && !expects_growth(peaks, micro);
        if (sweep.new_batch == NewBatch::kTouchHeap && at.grows) {
          // The smaller batch's large blocks go back to the heap first, where the touch makes them
          // resident for the new batch's, as it does its other tensors' (a kept one would miss:
          // bert-mini's deep step at 8 samples faulted 21,189 pages in, 40 ms of its 153).
          tracker.release_cached_blocks();
          const double expected = baseline + expected_peak(peaks, batch);
          const size_t live = tracker.live_bytes();
          // Touched whatever this process held before: pages an earlier variant made resident may
          // have gone back since (bert-mini's second base key, profiled after the first in one
          // process, faulted 23,459 pages in at 20 samples and ran 233 ms against 213-223 for
          // either key touched), and touching pages resident costs next to nothing.
          if (expected > static_cast<double>(live)) {
            const size_t touched = touch_heap(static_cast<size_t>(expected) - live);
            if (tracing()) {
              std::fprintf(stderr,
                           "profile trace: the heap made resident for %lld samples: %zu bytes "
                           "touched, %.0f expected\n",
                           static_cast<long long>(batch), touched, expected);
            }
          }
        }
        tracker.reset_peak();
        double optimizer_before = 0;
        // The first timed step: what the point's collectives and optimizer time are counted from.
        const auto first_timed = [&] {
          if (group) group->reset_tally();
          optimizer_before = trainer.optimizer_seconds();
          return run(batch);
        };
        const long faults_before = minor_page_faults();
        std::vector<double> ms = {first_timed()};
        const long faults = minor_page_faults() - faults_before;
        if (may_time_again && faults >= kFaultsToTimeAgain) {
          if (tracing()) {
            std::fprintf(
                stderr,
                "profile trace: %lld block(s) at %lld samples: timed again, the first step "
                "(%.1f ms) faulted %ld pages in\n",
                static_cast<long long>(depth), static_cast<long long>(batch), ms.front(), faults);
          }
          ms = {first_timed()};
        }
        // A second timed step only where a hiccup of the machine (tens of milliseconds, whatever
        // the step) weighs on the first: table 3's smallest batch takes 0.4–0.8 s a step. Steps of
        // a few milliseconds (a tiny model) until they add up (runners/sweep_steps.h).
        const int steps_to_time =
            batch <= sweep.once_up_to
                ? 1
                : timed_repeats(ms.front(),
                                batch <= sweep.few && ms.front() < kShortStepMs ? 2 : 1);
        while (static_cast<int>(ms.size()) < steps_to_time) ms.push_back(run(batch));
        const int steps = static_cast<int>(ms.size());
        if (sweep.optimizer_ms)
          sweep.optimizer_ms->push_back((trainer.optimizer_seconds() - optimizer_before) * 1e3 /
                                        steps);
        cost::ProfilePoint p;
        p.layers = depth;
        p.batch = batch;
        p.ckpt_blocks = ckpt;
        p.micro_batches = micro;
        p.step_ms = median(ms);
        p.peak_bytes = static_cast<double>(tracker.peak_bytes()) - baseline;
        if (group) p.collectives = group->tally() * (1.0 / steps);
        points.push_back(p);
        peaks.push_back({batch, p.peak_bytes});
        if (tracing()) {
          std::fprintf(
              stderr,
              "profile trace: %lld block(s), %lld checkpointed, %lld micro-batch(es), %lld "
              "samples: %.1f ms (%d timed step(s)), %ld page faults in the first, peak %.0f "
              "bytes\n",
              static_cast<long long>(depth), static_cast<long long>(ckpt),
              static_cast<long long>(micro), static_cast<long long>(batch), p.step_ms, steps,
              faults, p.peak_bytes);
        }
      } catch (const c10::OutOfMemoryError& e) {
        // Ran into it: the model is left mid-step, and goes with the sweep. Not at the warm-ups'
        // batch, which every point of the variant needs.
        if (!sweep.short_of_budget || batch <= micro) throw;
        stop_short(batch, first_line(e.what()));
        break;
      }
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw failed(e.what());
  }
  return points;
}

// Keys that differ from `base` (of `base_knobs`) only inside the blocks: their blocks and the
// base's alone, in the same rounds (runners/block_probe.h), at the batches of the base's deep
// variant; checkpointed, composed from the plain differences at the batches the base was measured
// all-checkpointed at (cost::checkpointed_from_plain). The deep steps are composed from the base's
// and the rest is derived (cost/derived_profile.h), one profile per key.
std::vector<cost::Profile> measure_derived(const Workload& w, const std::vector<Config>& knobs,
                                           const cost::Profile& base, const Config& base_knobs) {
  int64_t deep = 0;
  for (const cost::ProfilePoint& q : base.points) deep = std::max(deep, q.layers);
  std::set<int64_t> batches, checkpointed_at;
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers != deep || q.micro_batches != 1 || q.derived) continue;
    if (q.ckpt_blocks == 0) batches.insert(q.batch);
    if (q.ckpt_blocks == deep) checkpointed_at.insert(q.batch);
  }
  batches.insert(checkpointed_at.begin(), checkpointed_at.end());
  const std::vector<std::vector<cost::BlockDifference>> differences = probe_block_differences(
      w, base_knobs, knobs, std::vector<int64_t>(batches.begin(), batches.end()), 0);
  std::vector<cost::Profile> out;
  for (size_t i = 0; i < knobs.size(); ++i) {
    std::vector<cost::BlockDifference> d = differences[i];
    for (const cost::BlockDifference& plain : differences[i]) {
      if (checkpointed_at.count(plain.batch)) d.push_back(cost::checkpointed_from_plain(plain));
    }
    // The base's parameters outside the blocks (the same embeddings and head), the probed block's
    // inside: no model of the key is built but its one block.
    cost::ModelShape shape = base.shape;
    shape.block_params += differences[i].front().params;
    out.push_back(cost::derive_profile(base, cost::deep_steps_from_blocks(base, d, shape), shape));
    out.back().block_bytes = cost::block_bytes_from(base, differences[i]);
  }
  return out;
}

// The deep variant with every block checkpointed, one timed step at one sample and one at `at`:
// the recompute's share and what a checkpointed block keeps are read at `at` (a one-sample step
// weighs 1% of the share's fit on gpt-mini, so its time needs no second step — nor the steps that
// add up to 60 ms elsewhere: two more of bert-mini's 27 ms), the one-sample step for its bytes
// alone — the whole model's least peak. The heap is made resident up to what
// the plain deep variant's steps (`plain`) reached at `at`, more than checkpointing needs: in a
// process of its own (a profile extended) the step at `at` would fault it in while timed.
std::vector<cost::ProfilePoint> measure_checkpointed_steps(const Workload& w, const Config& knobs,
                                                           int tp, int64_t deep, int64_t at,
                                                           const std::vector<PeakAt>& plain) {
  return measure_sweep(w, knobs, tp,
                       Sweep(deep, deep, 1, {1, at})
                           .meeting_new_batches(NewBatch::kTouchHeap)
                           .knowing(plain)
                           .timed_once_up_to(1));
}

// A key that differs from `base` only in the head (cost/head_difference.h): its own one-block
// steps at every batch and micro-batch count `base`'s were measured at, for their bytes (exact at
// any step), and the rest of `base` shifted by what they differ by. Their time is the base's (and
// the optimizer's over the parameters the head has more) and what the head costs more on one block,
// paired with the base's steps where both rounds agree (cost::paired_head_ms): what gpt-mini's
// fused loss saves shows at depth (runners/cost_model.h measures the deep steps) — on one block
// 0.05 ms a sample, where one unpaired step on this machine differed from the base's by −12 to +110
// ms at 16 samples and through the block's time moved the recompute extrapolated to 60 samples by
// 20% —, and BERT's, which computes the masked positions' logits alone, on one block too
// (docs/cost-model.md). A key of another embedding split (`embed_shard`, of
// `base_knobs`' under tensor parallelism) runs its checkpointed deep steps where the base's ran,
// for their bytes too: a checkpointed block keeps its input, and the first one's is what the
// embeddings make (all-gathered when split by the hidden size) — gpt-tiny at 8 samples kept 8 kB
// more than the base's difference along the plain steps says. Another head changes no block's
// input, and its profile runs none.
cost::Profile measure_across_head(const Workload& w, const Config& knobs, const Config& base_knobs,
                                  const cost::Profile& base) {
  std::map<int64_t, std::set<int64_t>> batches;           // by micro-batches
  std::map<std::pair<int64_t, int64_t>, double> base_ms;  // by (micro-batches, batch)
  std::vector<PeakAt> base_peaks;                         // one micro-batch's
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers != 1 || q.ckpt_blocks != 0 || q.derived) continue;
    batches[q.micro_batches].insert(q.batch);
    base_ms[{q.micro_batches, q.batch}] = q.step_ms;
    if (q.micro_batches == 1) base_peaks.push_back({q.batch, q.peak_bytes});
  }
  SLAPO_CHECK(batches.count(1), ErrorCode::kInvalidArgument,
              "deriving a profile across the head: the base has no measured one-block step");
  // Under tensor parallelism, as one rank of the base's group: the collectives counted, the
  // head's parameters this rank's shard.
  const int tp = static_cast<int>(base.tp);
  cost::Profile own;
  own.layers = base.layers;
  own.tp = base.tp;
  own.shape = model_shape(w, knobs, tp);
  const cost::OutsideParams more = cost::outside_params_more(own.shape, base.shape);
  // One micro-batch: the new key's one-block steps and the base's, in this process, twice, the
  // order switching; what the head costs more there is their paired difference
  // (cost::paired_head_ms: 0 unless both rounds agree), added to the base's time. Several
  // micro-batches (a GPipe point): the bytes alone, the time the base's. A batch new to a sweep
  // meets a heap made resident up to the base's peak there, which its profile knows, rather than
  // an untimed step: those were a third of the key's profile (llama-mini's fused loss, 3.2-3.4 s
  // against 2.2-2.3), and the first timed steps fault no more pages in (none, on table 5's key).
  const std::vector<int64_t> one_micro(batches.at(1).begin(), batches.at(1).end());
  std::map<int64_t, std::vector<double>> paired;  // by batch: each round's difference
  std::vector<cost::ProfilePoint> own_one;
  for (int round = 0; round < 2; ++round) {
    std::map<int64_t, double> ms[2];  // the base's, the new key's
    for (const int which : round == 0 ? std::vector<int>{1, 0} : std::vector<int>{0, 1}) {
      for (const cost::ProfilePoint& q :
           measure_sweep(w, which == 1 ? knobs : base_knobs, tp,
                         Sweep(1, 0, 1, one_micro)
                             .meeting_new_batches(NewBatch::kTouchHeap)
                             .knowing(base_peaks))) {
        ms[which][q.batch] = q.step_ms;
        if (which == 1 && round == 0) own_one.push_back(q);
      }
    }
    for (const auto& [batch, own_ms] : ms[1]) paired[batch].push_back(own_ms - ms[0].at(batch));
  }
  for (cost::ProfilePoint q : own_one) {
    q.step_ms = base_ms.at({1, q.batch}) + cost::paired_head_ms(paired[q.batch]) +
                base.optimizer_ms_per_param * more.total();
    own.points.push_back(q);
  }
  for (const auto& [micro, at] : batches) {
    if (micro == 1) continue;
    for (cost::ProfilePoint q :
         measure_sweep(w, knobs, tp, Sweep(1, 0, micro, {at.begin(), at.end()}))) {
      q.step_ms = base_ms.at({micro, q.batch}) + base.optimizer_ms_per_param * more.total();
      own.points.push_back(q);
    }
  }
  auto embed_shard = [&](const Config& c) {
    return models::parse_template_config(w.schedule_template(), w.spec(), c).embed_shard;
  };
  if (embed_shard(knobs) != embed_shard(base_knobs)) {
    for (const cost::ProfilePoint& q : base.points) {
      if (q.layers == 1 || q.ckpt_blocks == 0 || q.micro_batches != 1 || q.derived) continue;
      for (const cost::ProfilePoint& c :
           measure_sweep(w, knobs, tp, Sweep(q.layers, q.ckpt_blocks, 1, {q.batch})))
        own.points.push_back(c);
    }
  }
  return cost::shift_head(base, cost::head_differences(base, own), more);
}

// The smallest batch a profile measures above one sample: two batches above one, whatever the
// space's (memory is fitted over them).
int64_t smallest_batch(const ProfileRequest& request) {
  const int64_t hi = std::max<int64_t>(request.batch_hi, 3);
  return std::clamp<int64_t>(request.batch_lo, 2, hi - 1);
}

}  // namespace

std::vector<PeakAt> plain_deep_peaks(const cost::Profile& profile) {
  int64_t deep = 0;
  for (const cost::ProfilePoint& q : profile.points) deep = std::max(deep, q.layers);
  std::vector<PeakAt> peaks;
  for (const cost::ProfilePoint& q : profile.points) {
    if (q.layers == deep && q.ckpt_blocks == 0 && q.micro_batches == 1)
      peaks.push_back({q.batch, q.peak_bytes});
  }
  return peaks;
}

cost::Profile measure_profile(const ProfileRequest& request) {
  return measure_profiles(request).front();
}

// A key that differs from `base` (of `base_knobs`) only in the optimizer (cost/optimizer_swap.h):
// the base's steps that peaked in its optimizer step run again with this key's, a sweep per
// variant; the optimizers' difference timed within the deep variant's one-sample steps, the base's
// first and this key's in its sweep after it, each model warmed up by a step of its own.
cost::Profile measure_across_optimizer(const Workload& w, const Config& knobs,
                                       const models::TemplateConfig& tc, const Config& base_knobs,
                                       const cost::Profile& base, int64_t few) {
  const int tp = static_cast<int>(base.tp);
  int64_t deep = 0;
  for (const cost::ProfilePoint& q : base.points) deep = std::max(deep, q.layers);
  // A step that counts for nothing first, as a whole profile's (measure_profiles).
  measure_sweep(w, knobs, tp, Sweep(1, 0, 1, {}).two_steps_up_to(few));
  // The base's optimizer within the deep variant's one-sample step.
  std::vector<double> base_ms;
  measure_sweep(w, base_knobs, tp,
                Sweep(deep, 0, 1, {1}).two_steps_up_to(few).adding_optimizer_ms_to(&base_ms));
  // The optimizer-bound steps, a sweep per variant (blocks, checkpointed blocks, micro-batches),
  // ascending: the deep variant's plain sweep — it always holds the one-sample step — times this
  // key's optimizer there first.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<int64_t>> sweeps;
  for (const cost::ProfilePoint& q : cost::optimizer_bound_points(base))
    sweeps[{q.layers, q.ckpt_blocks, q.micro_batches}].push_back(q.batch);
  std::vector<cost::ProfilePoint> measured;
  std::vector<double> own_ms;
  for (auto& [variant, batches] : sweeps) {
    const auto [depth, ckpt, micro] = variant;
    std::sort(batches.begin(), batches.end());
    const bool deep_plain = depth == deep && ckpt == 0 && micro == 1;
    for (const cost::ProfilePoint& q : measure_sweep(
             w, knobs, tp,
             Sweep(depth, ckpt, micro, batches)
                 .two_steps_up_to(few)
                 .meeting_new_batches(depth == 1 ? NewBatch::kStepUntimed : NewBatch::kTouchHeap)
                 .adding_optimizer_ms_to(deep_plain ? &own_ms : nullptr)))
      measured.push_back(q);
  }
  SLAPO_CHECK(!base_ms.empty() && !own_ms.empty(), ErrorCode::kInvalidArgument,
              "a profile derived across the optimizer needs its base's deep one-sample step");
  const double deep_params = base.shape.variant_params(static_cast<double>(deep));
  const double ms_per_param =
      std::max(0.0, base.optimizer_ms_per_param + (own_ms.front() - base_ms.front()) / deep_params);
  return cost::swap_optimizer(base, ms_per_param,
                              optimizer_temp_bytes_per_element(w, tc, deep_params), measured);
}

std::vector<cost::Profile> measure_profiles(const ProfileRequest& request) {
  const auto start = Clock::now();
  const MachineCeiling ceiling;
  Workload w = request.workload;
  // One timed step per point: against two, side by side, the same within 2% at 40 samples
  // (docs/cost-model.md), for half the profile. Points of a few samples, where one hiccup of the
  // machine weighs most and a step costs least, time two — when their first step is short
  // (kShortStepMs).
  w.memory_budget = 0;  // the profile measures; the prediction decides what fits
  const int64_t few = std::max<int64_t>(request.batch_lo, 2);
  torch::set_num_threads(w.threads);
  const models::TemplateConfig tc =
      models::parse_template_config(w.schedule_template(), w.spec(), request.knobs);
  const int tp = tc.parallel.layout.tp;
  if (request.extend && request.extend_gpipe_step) {
    // The one-block GPipe step alone, where a full profile would have measured it.
    cost::Profile profile = *request.extend;
    SLAPO_CHECK(!cost::has_gpipe_step(profile), ErrorCode::kInvalidArgument,
                "extending a profile by its GPipe step: it has one");
    for (const cost::ProfilePoint& q :
         measure_sweep(w, request.knobs, tp,
                       Sweep(1, 0, 2, {2 * smallest_batch(request)})
                           .two_steps_up_to(few)
                           .meeting_new_batches(NewBatch::kStepUntimed)))
      profile.points.push_back(q);
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return {profile};
  }
  if (request.extend && request.extend_checkpointed_step) {
    // The deep variant with every block checkpointed, where a whole profile would have measured it:
    // the largest batch of its plain steps up to batch_hi (at least 3, as below; the predictor
    // reads both at one batch), and one sample.
    cost::Profile profile = *request.extend;
    SLAPO_CHECK(!cost::has_checkpointed_step(profile), ErrorCode::kInvalidArgument,
                "extending a profile by its checkpointed step: it has one");
    const int64_t hi = std::max<int64_t>(request.batch_hi, 3);
    int64_t deep = 0, at = 0;
    for (const cost::ProfilePoint& q : profile.points) deep = std::max(deep, q.layers);
    for (const cost::ProfilePoint& q : profile.points) {
      if (q.layers == deep && q.ckpt_blocks == 0 && q.micro_batches == 1 && q.batch <= hi)
        at = std::max(at, q.batch);
    }
    SLAPO_CHECK(deep > 1 && at > 1, ErrorCode::kInvalidArgument,
                "extending a profile by its checkpointed step: no deep step above one sample");
    for (const cost::ProfilePoint& q :
         measure_checkpointed_steps(w, request.knobs, tp, deep, at, plain_deep_peaks(profile)))
      profile.points.push_back(q);
    // And the block checkpointed alone, at the batches its plain lines were measured at.
    if (profile.block_bytes.measured && !profile.block_bytes.checkpointed_measured) {
      measure_checkpointed_block_bytes(w, request.knobs, smallest_batch(request), hi,
                                       profile.block_bytes);
    }
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return {profile};
  }
  if (request.extend) {
    cost::Profile profile = *request.extend;
    int64_t deep = 0;
    for (const cost::ProfilePoint& q : profile.points) deep = std::max(deep, q.layers);
    // The deep variant alone: the model's own depth is measured, not composed, where the largest
    // batches that fit are; a block there is the deep step less the one-block variant's last
    // segment, extended (a pipeline stage of fewer blocks is all that reads it). Its first batch
    // grows the heap from its warm-up steps', which is made resident first up to the peak
    // expected there — from the derived peaks too: a key derived across the head has measured no
    // deep step, and without them its first deep step touched no heap. BERT's fused head on
    // bert-parallel (docs/cost-model.md) faulted 20,215 pages in at 8 samples and took 191 ms,
    // where a whole profile of that key on one rank measured 158–162; touched, 4,983 and 159 ms.
    std::vector<int64_t> batches = request.extend_batches;
    if (batches.empty()) batches = {request.batch_hi};
    std::sort(batches.begin(), batches.end());
    // Steps this machine cannot hold extend it by nothing: the profile as first measured stands.
    for (const cost::ProfilePoint& q : measure_sweep(w, request.knobs, tp,
                                                     Sweep(deep, 0, 1, batches)
                                                         .two_steps_up_to(few)
                                                         .meeting_new_batches(NewBatch::kTouchHeap)
                                                         .knowing(plain_deep_peaks(profile))
                                                         .stopping_short_of_the_budget()))
      profile.points.push_back(q);
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return {profile};
  }
  if (request.base && request.head) {
    SLAPO_CHECK(tp == request.base->tp, ErrorCode::kInvalidArgument,
                "a profile derived across the head needs its base's tp = ", request.base->tp,
                ", not ", tp);
    cost::Profile profile =
        measure_across_head(w, request.knobs, request.base_knobs, *request.base);
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return {profile};
  }
  if (request.base && request.optimizer) {
    cost::Profile profile =
        measure_across_optimizer(w, request.knobs, tc, request.base_knobs, *request.base, few);
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return {profile};
  }
  if (request.base) {
    std::vector<Config> knobs = {request.knobs};
    knobs.insert(knobs.end(), request.siblings.begin(), request.siblings.end());
    std::vector<cost::Profile> profiles =
        measure_derived(w, knobs, *request.base, request.base_knobs);
    // The probe's time, shared evenly: the profiles' times add up to what it took.
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    for (cost::Profile& p : profiles) p.profile_s = seconds / static_cast<double>(profiles.size());
    return profiles;
  }
  const int64_t layers = w.spec().layers;
  const int64_t deep = std::clamp<int64_t>(layers, 2, 8);
  int64_t hi = std::max<int64_t>(request.batch_hi, 3);
  const int64_t lo = smallest_batch(request);
  const int64_t mid = cost::middle_batch(lo, hi, request.batches_taken);

  auto part_start = Clock::now();
  cost::Profile profile;
  profile.layers = layers;
  profile.tp = tp;
  profile.shape = model_shape(w, request.knobs, tp);
  // Only here: a derived profile takes its base's shape, and with it these (the same tokens).
  measure_input_bytes(w, w.spec(), w.seq_len_for(request.knobs), profile.shape);
  trace_part("the shape", part_start);
  // A step that counts for nothing first: a process's first steps run slower (thread pools, lazy
  // initialisation).
  measure_sweep(w, request.knobs, tp, Sweep(1, 0, 1, {}).two_steps_up_to(few));
  trace_part("the step that counts for nothing", part_start);
  // The optimizer's steps in the deep variant's plain steps: its time on the model's own
  // parameters, in the caches a step leaves it.
  std::vector<double> optimizer_ms;
  // Each variant (depth, checkpointed blocks, GPipe micro-batches) at its batches, the cheap ones
  // first.
  // The plain variants stop short of what this machine's memory holds (Sweep); the largest batch
  // measured is returned.
  StoppedShort stopped;  // where a plain sweep last stopped short, and why
  auto measure = [&](int64_t depth, int64_t ckpt, int64_t micro, std::vector<int64_t> batches) {
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    Sweep sweep =
        Sweep(depth, ckpt, micro, batches)
            .two_steps_up_to(few)
            .meeting_new_batches(depth == 1 ? NewBatch::kStepUntimed : NewBatch::kTouchHeap)
            .adding_optimizer_ms_to(depth > 1 && ckpt == 0 && micro == 1 ? &optimizer_ms : nullptr);
    if (ckpt == 0 && micro == 1) sweep.stopping_short_of_the_budget(&stopped);
    int64_t largest = 0;
    for (const cost::ProfilePoint& q : measure_sweep(w, request.knobs, tp, sweep)) {
      profile.points.push_back(q);
      largest = std::max(largest, q.batch);
    }
    trace_part(depth == 1 ? "a one-block sweep" : "a deep sweep", part_start);
    return largest;
  };
  const int64_t one_block_hi = measure(1, 0, 1, {1, lo, hi});
  if (request.gpipe_step) measure(1, 0, 2, {2 * lo});
  std::vector<int64_t> deep_batches = {1, lo};
  if (mid > lo && mid < hi) deep_batches.push_back(mid);
  // Where one block did not fit, more do not.
  if (one_block_hi == hi) deep_batches.push_back(hi);
  int64_t deep_hi = measure(deep, 0, 1, deep_batches);
  // Its steps through 1 and `lo` alone would hold the deep line where the optimizer's step sets
  // the peak, not the batch: where it stopped at or below the middle batch — run into the ceiling
  // there, which the flat line through them did not expect —, a batch between `lo` and that one
  // (the space's nearest their geometric mean), in a model of its own, until one fits or none is
  // left between them.
  while (deep_hi <= lo && stopped.batch > lo + 1) {
    int64_t between = cost::middle_batch(lo, stopped.batch, request.batches_taken);
    if (between == 0)
      between =
          std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(stopped.batch)));
    if (between <= lo || between >= stopped.batch) break;
    deep_hi = std::max(deep_hi, measure(deep, 0, 1, {between}));  // else stopped at `between`
  }
  if (deep_hi < hi) {
    // Stopped short of this machine's memory: the profile's largest batch is the deep variant's
    // largest, every part below measured there, and the one-block variant's plain steps past it
    // go (a block is the difference of the two at the same batches).
    SLAPO_CHECK(deep_hi > lo, ErrorCode::kRuntime, "profiling ",
                request.knobs.empty() ? std::string("the workload") : request.knobs.to_string(),
                " with ", deep, " block(s), at ", stopped.batch, " samples failed: ", stopped.why,
                " (its steps held up to ", deep_hi, " samples)");
    const auto past = [&](const cost::ProfilePoint& q) {  // the GPipe step at 2 lo stays
      return q.layers == 1 && q.micro_batches == 1 && q.batch > deep_hi;
    };
    profile.points.erase(std::remove_if(profile.points.begin(), profile.points.end(), past),
                         profile.points.end());
    hi = deep_hi;
    if (one_block_hi != deep_hi) measure(1, 0, 1, {hi});
  }
  // At the largest batch: what a checkpointed block keeps is read per sample off this one step,
  // and what is not per sample (the fused head's chunk buffers) weighs least there — at the
  // middle batch the fused head's family was over-predicted by 8.7% (docs/benchmarks.md). The
  // recompute's share is fitted with weights growing as the square of a block's time (a
  // one-sample step weighs 1% of it on gpt-mini). And at one sample, for its bytes: the least
  // peak of the whole model, which the one-sample step without checkpointing is not where it
  // peaks at its loss (gpt-mini at sequence 128: 142.29 MB, where two micro-batches of one sample
  // with every block checkpointed peak at 135.79).
  if (request.checkpointed_step) {
    for (const cost::ProfilePoint& q :
         measure_checkpointed_steps(w, request.knobs, tp, deep, hi, plain_deep_peaks(profile)))
      profile.points.push_back(q);
    trace_part("the checkpointed sweep", part_start);
  }
  const double deep_params = profile.shape.variant_params(static_cast<double>(deep));
  profile.optimizer_ms_per_param = median(optimizer_ms) / deep_params;
  profile.optimizer_temp_bytes_per_element = optimizer_temp_bytes_per_element(w, tc, deep_params);
  trace_part("the optimizer's temporaries", part_start);
  profile.prologue_ms_per_sample = prologue_ms_per_sample(w, request.knobs, hi);
  trace_part("the prologue", part_start);
  profile.block_bytes = measure_block_bytes(w, request.knobs, lo, hi, request.checkpointed_step);
  trace_part("a block's bytes", part_start);
  profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
  return {profile};
}

std::string ProfileRequest::to_json() const {
  nlohmann::ordered_json j;
  j["workload"] = nlohmann::ordered_json::parse(workload.to_json());
  j["knobs"] = nlohmann::ordered_json::parse(knobs.to_json());
  j["batch_lo"] = batch_lo;
  j["batch_hi"] = batch_hi;
  if (!batches_taken.empty()) j["batches_taken"] = batches_taken;
  if (base) {
    j["base"] = nlohmann::ordered_json::parse(base->to_json());
    j["base_knobs"] = nlohmann::ordered_json::parse(base_knobs.to_json());
    if (head) j["head"] = true;
    if (optimizer) j["optimizer"] = true;
    if (!siblings.empty()) {
      j["siblings"] = nlohmann::ordered_json::array();
      for (const Config& c : siblings)
        j["siblings"].push_back(nlohmann::ordered_json::parse(c.to_json()));
    }
  }
  if (extend) {
    j["extend"] = nlohmann::ordered_json::parse(extend->to_json());
    if (!extend_batches.empty()) j["extend_batches"] = extend_batches;
  }
  if (!gpipe_step) j["gpipe_step"] = false;
  if (extend_gpipe_step) j["extend_gpipe_step"] = true;
  if (!checkpointed_step) j["checkpointed_step"] = false;
  if (extend_checkpointed_step) j["extend_checkpointed_step"] = true;
  if (collectives) j["collectives"] = true;
  return j.dump();
}

namespace {

// The request's array `field` of batch sizes (none when absent). Throws Error(kInvalidArgument)
// naming `origin` and the field for anything but batch sizes of one or more.
std::vector<int64_t> batch_sizes(const nlohmann::json& request, const char* field,
                                 const std::string& origin) {
  std::vector<int64_t> out;
  if (!request.contains(field)) return out;
  const nlohmann::json& batches = request[field];
  SLAPO_CHECK(batches.is_array(), ErrorCode::kInvalidArgument, origin, ": a profile request's ",
              field, " are an array of batch sizes");
  for (const nlohmann::json& b : batches) {
    SLAPO_CHECK(b.is_number_integer() && b.get<int64_t>() >= 1, ErrorCode::kInvalidArgument, origin,
                ": a profile request's ", field, " are batch sizes of one or more");
    out.push_back(b.get<int64_t>());
  }
  return out;
}

}  // namespace

ProfileRequest ProfileRequest::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("workload") && j.contains("knobs") &&
                  j.value("batch_lo", 0) >= 1 && j.value("batch_hi", 0) >= 1,
              ErrorCode::kInvalidArgument, origin,
              ": not a profile request (workload, knobs, batch_lo, batch_hi)");
  for (const char* flag : {"head", "optimizer", "gpipe_step", "extend_gpipe_step",
                           "checkpointed_step", "extend_checkpointed_step", "collectives"}) {
    SLAPO_CHECK(!j.contains(flag) || j[flag].is_boolean(), ErrorCode::kInvalidArgument, origin,
                ": a profile request's ", flag, " is true or false");
  }
  ProfileRequest r;
  r.workload = Workload::from_json(j["workload"].dump(), origin);
  r.knobs = Config::from_json(j["knobs"].dump(), origin);
  r.batch_lo = j["batch_lo"].get<int64_t>();
  r.batch_hi = j["batch_hi"].get<int64_t>();
  r.batches_taken = batch_sizes(j, "batches_taken", origin);
  if (j.contains("base")) {
    // Without its knobs the base's block could not be built: never guessed.
    SLAPO_CHECK(j.contains("base_knobs"), ErrorCode::kInvalidArgument, origin,
                ": a profile request with a base needs the base's knobs (base_knobs)");
    r.base = cost::Profile::from_json(j["base"].dump(), origin);
    r.base_knobs = Config::from_json(j["base_knobs"].dump(), origin);
    r.head = j.value("head", false);
    r.optimizer = j.value("optimizer", false);
    if (j.contains("siblings")) {
      SLAPO_CHECK(j["siblings"].is_array(), ErrorCode::kInvalidArgument, origin,
                  ": a profile request's siblings are an array of knobs");
      for (const nlohmann::json& c : j["siblings"])
        r.siblings.push_back(Config::from_json(c.dump(), origin));
    }
  }
  if (j.contains("extend")) {
    r.extend = cost::Profile::from_json(j["extend"].dump(), origin);
    r.extend_batches = batch_sizes(j, "extend_batches", origin);
  }
  r.gpipe_step = j.value("gpipe_step", true);
  r.extend_gpipe_step = j.value("extend_gpipe_step", false);
  r.checkpointed_step = j.value("checkpointed_step", true);
  r.extend_checkpointed_step = j.value("extend_checkpointed_step", false);
  r.collectives = j.value("collectives", false);
  return r;
}

void run_profile_worker(const std::string& request_json, std::ostream& out) {
  const ProfileRequest request = ProfileRequest::from_json(request_json, "--profile");
  const std::vector<cost::Profile> profiles = measure_profiles(request);
  // After the profile: every rank's sweeps done (the ranks meet when they join the group), the
  // machine as quiet as for the collectives' own job.
  std::optional<cost::CollectiveProfile> collectives;
  if (request.collectives) collectives = measure_collectives();
  const char* rank = std::getenv("RANK");
  if (rank && std::string(rank) != "0") return;
  if (collectives) out << collectives->to_json() << std::endl;
  nlohmann::json line = nlohmann::json::array();
  for (const cost::Profile& p : profiles) line.push_back(nlohmann::json::parse(p.to_json()));
  out << line.dump() << std::endl;
}

std::vector<cost::Profile> measure_profiles_beside_peers(const ProfileRequest& request, int ranks,
                                                         const std::vector<std::string>& worker,
                                                         cost::CollectiveProfile* collectives) {
  SLAPO_CHECK(!request.collectives || (collectives && ranks > 1), ErrorCode::kInvalidArgument,
              "a profile that times the collectives too runs beside peers and returns them");
  if (ranks <= 1) return measure_profiles(request);
  dist::check_not_in_a_rank("profiling", worker);
  dist::LaunchOptions launch;
  launch.nproc = ranks;
  launch.argv = worker;
  launch.argv.push_back("--profile");
  launch.argv.push_back(request.to_json());
  launch.env.emplace("OMP_WAIT_POLICY", "passive");
  const auto start = Clock::now();
  const dist::LaunchResult job = dist::launch_ranks(launch);
  SLAPO_CHECK(job.ok(), ErrorCode::kRuntime, "profiling failed: ", job.failure());
  if (tracing()) std::fputs(job.ranks[0].err.c_str(), stderr);  // rank 0's trace
  const nlohmann::json line = nlohmann::json::parse(last_line(job.ranks[0].out), nullptr, false);
  SLAPO_CHECK(line.is_array() && !line.empty(), ErrorCode::kRuntime,
              "the profiling job printed no profiles");
  std::vector<cost::Profile> profiles;
  for (const nlohmann::json& p : line)
    profiles.push_back(cost::Profile::from_json(p.dump(), "the profiling job"));
  // The job's whole time, its launch too, shared evenly — but the collectives' own measuring.
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (request.collectives) {
    // The line before the profiles'.
    const std::string& out = job.ranks[0].out;
    const std::string before = last_line(out.substr(0, out.rfind(last_line(out))));
    SLAPO_CHECK(!before.empty(), ErrorCode::kRuntime,
                "the profiling job printed no profile of the collectives");
    *collectives = cost::CollectiveProfile::from_json(before, "the profiling job's collectives");
    seconds = std::max(0.0, seconds - collectives->profile_s);
  }
  for (cost::Profile& p : profiles) p.profile_s = seconds / static_cast<double>(profiles.size());
  return profiles;
}

}  // namespace slapo::runners
