#include "runners/profile_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "core/text.h"
#include "dist/world.h"
#include "models/training_batch.h"
#include "models/zoo.h"
#include "runners/heap_policy.h"
#include "runners/machine_memory.h"
#include "runners/parallel_trainer.h"
#include "runners/simulated_group.h"
#include "runners/tracking_allocator.h"

namespace slapo::runners {

using Clock = std::chrono::steady_clock;

bool profile_tracing() {
  const char* v = std::getenv("SLAPO_PROFILE_TRACE");
  return v && *v && std::string(v) != "0";
}

void trace_profile_part(const char* part, std::chrono::steady_clock::time_point& since) {
  const auto now = Clock::now();
  if (profile_tracing())
    std::fprintf(stderr, "profile trace: %s took %.0f ms\n", part,
                 std::chrono::duration<double, std::milli>(now - since).count());
  since = now;
}

MachineCeiling::MachineCeiling() {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  if (tracker.budget() != 0) return;  // held already (a profile within a profile)
  const int ranks = dist::RankEnv::present() ? dist::RankEnv::from_env().world_size : 1;
  if (const std::optional<MachineMemory> machine = machine_memory(ranks)) {
    tracker.set_budget(tracker.live_bytes() + static_cast<size_t>(machine->tensor_ceiling()),
                       "out of " + machine->ceiling_reason());
    set_ = true;
  }
}

MachineCeiling::~MachineCeiling() {
  if (set_) TrackingAllocator::instance().set_budget(0);
}

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
      if (profile_tracing()) {
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
            if (profile_tracing()) {
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
          if (profile_tracing()) {
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
        if (profile_tracing()) {
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

}  // namespace slapo::runners
