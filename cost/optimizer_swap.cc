#include "cost/optimizer_swap.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/error.h"

namespace slapo::cost {

namespace {

using Variant = std::pair<int64_t, int64_t>;  // blocks, checkpointed blocks
Variant variant_of(const ProfilePoint& q) { return {q.layers, q.ckpt_blocks}; }

bool is_one_sample(const ProfilePoint& q) { return q.batch == 1 && q.micro_batches == 1; }

std::map<Variant, double> one_sample_peaks(const std::vector<ProfilePoint>& points) {
  std::map<Variant, double> out;
  for (const ProfilePoint& q : points) {
    if (is_one_sample(q)) out[variant_of(q)] = q.peak_bytes;
  }
  return out;
}

auto step_of(const ProfilePoint& q) {
  return std::make_tuple(q.layers, q.batch, q.ckpt_blocks, q.micro_batches);
}

}  // namespace

std::vector<ProfilePoint> optimizer_bound_points(const Profile& base) {
  const std::map<Variant, double> floors = one_sample_peaks(base.points);
  std::vector<ProfilePoint> out;
  for (const ProfilePoint& q : base.points) {
    auto floor = floors.find(variant_of(q));
    if (is_one_sample(q) ||
        (floor != floors.end() && q.peak_bytes <= floor->second * (1 + kAtTheOneSamplePeak)))
      out.push_back(q);
  }
  return out;
}

Profile swap_optimizer(const Profile& base, double ms_per_param, double temp_bytes_per_element,
                       const std::vector<ProfilePoint>& measured) {
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, double> peak_of;
  for (const ProfilePoint& q : measured) peak_of[step_of(q)] = q.peak_bytes;
  for (const ProfilePoint& q : optimizer_bound_points(base)) {
    SLAPO_CHECK(peak_of.count(step_of(q)), ErrorCode::kInvalidArgument,
                "a profile derived across the optimizer needs the step of ", q.layers,
                " block(s) at ", q.batch, " sample(s) (", q.ckpt_blocks,
                " checkpointed) run again: it peaked in the base's optimizer step");
  }
  const std::map<Variant, double> floors = one_sample_peaks(measured);
  Profile out = base;
  out.optimizer_ms_per_param = ms_per_param;
  out.optimizer_temp_bytes_per_element = temp_bytes_per_element;
  for (ProfilePoint& q : out.points) {
    const double params = base.shape.variant_params(static_cast<double>(q.layers));
    // The base's optimizer is at most the whole of its step: its rate is timed within the deep
    // variant's steps, and a step timed fast beside a rate timed slow (a noisy machine, a
    // one-block step of a large vocabulary, which the optimizer is most of) once composed a step
    // of −3.2 ms. What is left of the step is its forward and backward, never below nothing.
    const double base_optimizer_ms = std::min(base.optimizer_ms_per_param * params, q.step_ms);
    q.step_ms += ms_per_param * params - base_optimizer_ms;
    if (auto at = peak_of.find(step_of(q)); at != peak_of.end()) {
      q.peak_bytes = at->second;
    } else if (auto floor = floors.find(variant_of(q)); floor != floors.end()) {
      q.peak_bytes = std::max(q.peak_bytes, floor->second);
    }
    q.derived = true;
  }
  return out;
}

}  // namespace slapo::cost
