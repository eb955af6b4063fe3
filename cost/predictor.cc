#include "cost/predictor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"

namespace slapo::cost {

namespace {

// Least-squares line y = a + b·x through the points (at least two distinct x).
std::pair<double, double> fit_line(const std::vector<std::pair<double, double>>& xy) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(xy.size());
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  return {(sy - slope * sx) / n, slope};
}

}  // namespace

std::string Prediction::to_json() const {
  nlohmann::ordered_json j;
  j["step_ms"] = step_ms;
  j["peak_bytes"] = peak_bytes;
  j["samples_per_s"] = samples_per_s;
  nlohmann::ordered_json t = nlohmann::ordered_json::object(), m = nlohmann::ordered_json::object();
  for (const auto& [name, v] : time_ms) t[name] = v;
  for (const auto& [name, v] : memory_bytes) m[name] = v;
  j["time_ms"] = t;
  j["memory_bytes"] = m;
  return j.dump();
}

Predictor::Predictor(Profile profile) : profile_(std::move(profile)) {
  const int64_t layers = profile_.layers;
  SLAPO_CHECK(layers >= 1, ErrorCode::kInvalidArgument, "profile: no blocks");
  // Without checkpointing: one point per batch size (the median of repeats).
  std::map<int64_t, std::vector<const ProfilePoint*>> plain;
  for (const ProfilePoint& p : profile_.points) {
    if (p.ckpt_blocks == 0) plain[p.batch].push_back(&p);
  }
  SLAPO_CHECK(plain.size() >= 2, ErrorCode::kInvalidArgument,
              "profile: needs steps at two batch sizes without checkpointing, has ", plain.size());
  std::vector<std::pair<double, double>> time, memory;
  for (const auto& [batch, points] : plain) {
    for (const ProfilePoint* p : points) {
      time.emplace_back(static_cast<double>(batch), p->step_ms);
      memory.emplace_back(static_cast<double>(batch), p->peak_bytes);
    }
  }
  std::tie(fit_.fixed_ms, fit_.compute_ms_per_sample) = fit_line(time);
  std::tie(fit_.state_bytes, fit_.act_bytes_per_sample) = fit_line(memory);
  // Checkpointed points: what a checkpointed block costs in time and saves in memory, per sample.
  std::vector<double> recompute, saved, floor;
  for (const ProfilePoint& p : profile_.points) {
    if (p.ckpt_blocks <= 0) continue;
    const double b = static_cast<double>(p.batch), n = static_cast<double>(p.ckpt_blocks);
    const double base_ms = fit_.fixed_ms + fit_.compute_ms_per_sample * b;
    recompute.push_back((p.step_ms - base_ms) / (n * b));
    const double activations = p.peak_bytes - fit_.state_bytes;
    if (p.ckpt_blocks == layers) floor.push_back(activations / b);
    else saved.push_back((fit_.act_bytes_per_sample * b - activations) / (n * b));
  }
  SLAPO_CHECK(!recompute.empty() && !floor.empty(), ErrorCode::kInvalidArgument,
              "profile: needs a step with every block checkpointed");
  fit_.recompute_ms_per_sample_block = std::max(0.0, median(recompute));
  fit_.floor_bytes_per_sample = median(floor);
  // Without a partly checkpointed point, the saving is the straight line to full checkpointing.
  fit_.saved_bytes_per_sample_block =
      saved.empty() ? (fit_.act_bytes_per_sample - fit_.floor_bytes_per_sample) / static_cast<double>(layers)
                    : median(saved);
}

Prediction Predictor::raw(const PredictInput& in) const {
  const double b = static_cast<double>(in.batch), n = static_cast<double>(in.ckpt_blocks);
  const double micro = b / static_cast<double>(std::max<int64_t>(1, in.micro_batches));
  Prediction p;
  const double compute = fit_.compute_ms_per_sample * b;
  const double recompute = fit_.recompute_ms_per_sample_block * n * b;
  p.step_ms = fit_.fixed_ms + compute + recompute;
  p.time_ms = {{"fixed", fit_.fixed_ms}, {"compute", compute}, {"recompute", recompute}};
  const double kept = micro * (fit_.act_bytes_per_sample - n * fit_.saved_bytes_per_sample_block);
  const double floor = in.ckpt_blocks > 0 ? micro * fit_.floor_bytes_per_sample : 0.0;
  const double activations = std::max(kept, floor);
  p.peak_bytes = fit_.state_bytes + activations;
  p.memory_bytes = {{"state", fit_.state_bytes}, {"activations", activations}};
  return p;
}

Prediction Predictor::predict(const PredictInput& in) const {
  Prediction p = raw(in);
  const double time_scale = time_ratios_.empty() ? 1.0 : median(time_ratios_);
  p.step_ms *= time_scale;
  for (auto& [name, v] : p.time_ms) v *= time_scale;
  p.peak_bytes *= memory_scale_;
  for (auto& [name, v] : p.memory_bytes) v *= memory_scale_;
  p.samples_per_s = p.step_ms > 0 ? static_cast<double>(in.batch) / (p.step_ms / 1000) : 0;
  return p;
}

void Predictor::calibrate(const PredictInput& in, double step_ms, double peak_bytes) {
  const Prediction p = raw(in);
  if (p.step_ms > 0 && step_ms > 0) time_ratios_.push_back(step_ms / p.step_ms);
  if (p.peak_bytes > 0 && peak_bytes > 0) memory_scale_ = std::max(memory_scale_, peak_bytes / p.peak_bytes);
}

void Predictor::calibrate_oom(const PredictInput& in, double budget_bytes) {
  const Prediction p = raw(in);
  if (p.peak_bytes > 0) memory_scale_ = std::max(memory_scale_, budget_bytes / p.peak_bytes * 1.0001);
}

}  // namespace slapo::cost
