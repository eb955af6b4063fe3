#include "runners/profiler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "core/stats.h"
#include "cost/profile_batches.h"
#include "models/template_config.h"
#include "models/templates.h"
#include "runners/block_probe.h"
#include "runners/derived_profiles.h"
#include "runners/profile_shape.h"
#include "runners/profile_sweep.h"
#include "runners/sweep_steps.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

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
  trace_profile_part("the shape", part_start);
  // A step that counts for nothing first: a process's first steps run slower (thread pools, lazy
  // initialisation).
  measure_sweep(w, request.knobs, tp, Sweep(1, 0, 1, {}).two_steps_up_to(few));
  trace_profile_part("the step that counts for nothing", part_start);
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
    trace_profile_part(depth == 1 ? "a one-block sweep" : "a deep sweep", part_start);
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
    trace_profile_part("the checkpointed sweep", part_start);
  }
  const double deep_params = profile.shape.variant_params(static_cast<double>(deep));
  profile.optimizer_ms_per_param = median(optimizer_ms) / deep_params;
  profile.optimizer_temp_bytes_per_element = optimizer_temp_bytes_per_element(w, tc, deep_params);
  trace_profile_part("the optimizer's temporaries", part_start);
  profile.prologue_ms_per_sample = prologue_ms_per_sample(w, request.knobs, hi);
  trace_profile_part("the prologue", part_start);
  profile.block_bytes = measure_block_bytes(w, request.knobs, lo, hi, request.checkpointed_step);
  trace_profile_part("a block's bytes", part_start);
  profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
  return {profile};
}

}  // namespace slapo::runners
