#pragma once
// One sweep of a profile (runners/profiler.h): a variant of a built-in workload's model — its
// blocks, how many of them checkpointed, its GPipe micro-batches — built once and stepped at each
// of its batches in turn, each point's time and peak read off the step; and what every part of a
// profile shares: this machine's memory as the allocator's budget while it measures, the trace.
// The profiler's own building block (runners/profiler.cc, runners/derived_profiles.cc), not an
// interface of its own.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "cost/profile.h"
#include "runners/sweep_steps.h"
#include "runners/workload.h"

namespace slapo::runners {

// A step of the profile's smallest batches shorter than this is timed twice (measure_profiles).
constexpr double kShortStepMs = 300;

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
bool profile_tracing();

// Traced (profile_tracing()): what each part of a profile took, from `since` on; `since` restarts.
void trace_profile_part(const char* part, std::chrono::steady_clock::time_point& since);

// While a profile measures and no budget holds this process, this machine's memory does
// (runners/machine_memory.h): past its ceiling a step throws out of memory and the profile fails
// with that reason, where the kernel's killer would have ended the process — the tuner's own, when
// it profiles on one rank (a space of gpt-mini at sequence 128 and batches up to 1024 without a
// budget: `slapo-tune plan` killed after two minutes, 24 GiB resident).
class MachineCeiling {
 public:
  MachineCeiling();
  ~MachineCeiling();
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
// process is met as `new_batch` says. A whole profile's one-block variant steps it untimed first (a
// step of it costs least, and that memory — the head's logits, mostly — is the largest share of its
// time: 20–33% at 4 samples of gpt-mini). The deep one touches the heap instead, up to the peak its
// steps measured so far (and `known`) expect there — as do the one-block sweeps of a key derived
// across the head, which know their base's peaks (runners/derived_profiles.h): its first step at 16
// samples faulted 37k pages and ran −8 to +19% against the two after it, and an untimed step would
// cost about a third more profile (docs/cost-model.md). A larger batch needs no warm-up of its own
// otherwise — the optimizer's state, the thread pools exist by then — where a model and a warm-up
// step per point made gpt-mini's profile cost 12 s, not 7. With `optimizer_ms`, each point's
// optimizer step (the mean over its timed steps) is appended to it. Batches up to `once_up_to` are
// timed once: a step read for its bytes alone.
std::vector<cost::ProfilePoint> measure_sweep(const Workload& w, const Config& knobs, int tp,
                                              const Sweep& sweep);

}  // namespace slapo::runners
