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
  // Without checkpointing: the step time per batch (the median of repeats) and the memory line.
  std::map<int64_t, std::vector<double>> plain_ms;
  std::vector<std::pair<double, double>> memory;
  for (const ProfilePoint& p : profile_.points) {
    if (p.ckpt_blocks != 0) continue;
    plain_ms[p.batch].push_back(p.step_ms);
    memory.emplace_back(static_cast<double>(p.batch), p.peak_bytes);
  }
  SLAPO_CHECK(plain_ms.size() >= 2, ErrorCode::kInvalidArgument,
              "profile: needs steps at two batch sizes without checkpointing, has ",
              plain_ms.size());
  for (const auto& [batch, ms] : plain_ms) {
    fit_.step_ms_by_batch.emplace_back(static_cast<double>(batch), median(ms));
  }
  std::tie(fit_.state_bytes, fit_.act_bytes_per_sample) = fit_line(memory);
  // Checkpointed points: the share of a step a checkpointed block adds (least squares through the
  // origin over n, at the batches profiled without checkpointing too), what one saves, and the
  // activations with every block checkpointed.
  double share_num = 0, share_den = 0;
  std::vector<double> saved, floor;
  double least_activations = -1;
  for (const ProfilePoint& p : profile_.points) {
    const double b = static_cast<double>(p.batch), n = static_cast<double>(p.ckpt_blocks);
    const double activations = p.peak_bytes - fit_.state_bytes;
    if (least_activations < 0 || activations < least_activations) {
      least_activations = activations;
      fit_.least_bytes = p.peak_bytes;
    }
    if (p.ckpt_blocks <= 0) continue;
    if (plain_ms.count(p.batch)) {
      share_num += n * (p.step_ms / step_ms_without_checkpointing(b) - 1);
      share_den += n * n;
    }
    if (p.ckpt_blocks == layers)
      floor.push_back(activations / b);
    else
      saved.push_back((fit_.act_bytes_per_sample * b - activations) / (n * b));
  }
  SLAPO_CHECK(share_den > 0, ErrorCode::kInvalidArgument,
              "profile: needs a checkpointed step at a batch also profiled without checkpointing");
  fit_.recompute_share_per_block = std::max(0.0, share_num / share_den);
  // A checkpointed point at a batch not profiled without checkpointing (one sample) tells T there.
  std::map<int64_t, std::vector<double>> derived;
  for (const ProfilePoint& p : profile_.points) {
    if (p.ckpt_blocks <= 0 || plain_ms.count(p.batch)) continue;
    derived[p.batch].push_back(
        p.step_ms / (1 + static_cast<double>(p.ckpt_blocks) * fit_.recompute_share_per_block));
  }
  for (const auto& [batch, ms] : derived)
    fit_.step_ms_by_batch.emplace_back(static_cast<double>(batch), median(ms));
  std::sort(fit_.step_ms_by_batch.begin(), fit_.step_ms_by_batch.end());
  SLAPO_CHECK(!floor.empty(), ErrorCode::kInvalidArgument,
              "profile: needs a step with every block checkpointed");
  // The least activations per sample with every block checkpointed (a point at one sample may have
  // its optimizer step, not its activations, as its peak: `least` covers that).
  fit_.floor_bytes_per_sample = *std::min_element(floor.begin(), floor.end());
  // Without a partly checkpointed point, the saving is the straight line to full checkpointing.
  fit_.saved_bytes_per_sample_block =
      saved.empty()
          ? (fit_.act_bytes_per_sample - fit_.floor_bytes_per_sample) / static_cast<double>(layers)
          : median(saved);
}

double Predictor::step_ms_without_checkpointing(double samples) const {
  const auto& t = fit_.step_ms_by_batch;
  // The segment that holds `samples`, or the nearest one (extrapolated along it).
  size_t i = 1;
  while (i + 1 < t.size() && samples > t[i].first) ++i;
  const auto& [x0, y0] = t[i - 1];
  const auto& [x1, y1] = t[i];
  const double y = y0 + (samples - x0) * (y1 - y0) / (x1 - x0);
  // Extrapolated below the least profiled batch: never under half its time per sample.
  if (samples < t.front().first)
    return std::max(y, 0.5 * t.front().second * samples / t.front().first);
  return y;
}

Prediction Predictor::raw(const PredictInput& in) const {
  const double b = static_cast<double>(in.batch), n = static_cast<double>(in.ckpt_blocks);
  const double m = static_cast<double>(std::max<int64_t>(1, in.micro_batches));
  const double micro = b / m;
  Prediction p;
  const double compute = m * step_ms_without_checkpointing(micro);
  const double recompute = compute * n * fit_.recompute_share_per_block;
  p.step_ms = compute + recompute;
  p.time_ms = {{"compute", compute}, {"recompute", recompute}};
  const double kept = micro * (fit_.act_bytes_per_sample - n * fit_.saved_bytes_per_sample_block);
  const double floor = in.ckpt_blocks > 0 ? micro * fit_.floor_bytes_per_sample : 0.0;
  p.peak_bytes = std::max(fit_.state_bytes + std::max(kept, floor), fit_.least_bytes);
  p.memory_bytes = {{"state", fit_.state_bytes}, {"activations", p.peak_bytes - fit_.state_bytes}};
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
  if (p.peak_bytes > 0 && peak_bytes > 0)
    memory_scale_ = std::max(memory_scale_, peak_bytes / p.peak_bytes);
}

void Predictor::calibrate_oom(const PredictInput& in, double budget_bytes) {
  const Prediction p = raw(in);
  if (p.peak_bytes > 0)
    memory_scale_ = std::max(memory_scale_, budget_bytes / p.peak_bytes * 1.0001);
}

}  // namespace slapo::cost
