#include "tuner/measured_memory.h"

#include <cmath>
#include <sstream>

namespace slapo::tuner {

namespace {
std::string mib(double bytes) {
  std::ostringstream out;
  out << static_cast<int64_t>(std::llround(bytes / (1 << 20))) << " MiB";
  return out.str();
}
}  // namespace

bool looks_like_memory_metric(const std::string& name) {
  if (!metric_bytes(name, 1)) return false;
  return name.find("peak") != std::string::npos || name.find("mem") != std::string::npos ||
         name.find("rss") != std::string::npos;
}

const space::KnobInfo* batch_knob(const space::CompiledSpace& space) {
  const space::KnobInfo* batch = nullptr;
  for (const auto& knob : space.knobs()) {
    if (knob.mem != space::MemTrend::kUp || knob.kind == space::KnobKind::kChoice ||
        knob.kind == space::KnobKind::kCuts || knob.kind == space::KnobKind::kBool)
      continue;
    if (!batch || knob.name == "batch_size") batch = &knob;
  }
  return batch;
}

MeasuredMemory::MeasuredMemory(const space::CompiledSpace& space, std::string metric,
                               double budget_bytes)
    : space_(space), dominance_(space), metric_(std::move(metric)), budget_(budget_bytes) {
  if (const space::KnobInfo* batch = batch_knob(space)) batch_knob_ = batch->name;
}

std::optional<double> MeasuredMemory::batch_of(const Config& config) const {
  if (batch_knob_.empty() || !config.contains(batch_knob_)) return std::nullopt;
  const Value& v = config.at(batch_knob_);
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

std::string MeasuredMemory::group_of(const Config& config) const {
  Config rest;
  for (const auto& [name, value] : config.entries()) {
    if (name != batch_knob_) rest.set(name, value);
  }
  return rest.canonical_json();
}

void MeasuredMemory::observe(const Config& config, const TrialResult& result, int64_t index) {
  if (result.status == TrialStatus::kOom) out_of_memory_.emplace_back(config, index);
  if (metric_.empty()) {
    for (const auto& [name, value] : result.metrics) {
      if (looks_like_memory_metric(name)) {
        metric_ = name;
        break;
      }
    }
  }
  const std::optional<double> bytes = reported_bytes(result);
  if (!bytes) return;
  Point p;
  p.bytes = *bytes;
  p.index = index;
  measured_.push_back({config, p});
  if (result.status != TrialStatus::kOk) return;  // a partial peak: not the configuration's
  if (const auto batch = batch_of(config)) {
    p.batch = *batch;
    by_group_[group_of(config)].push_back(p);
  }
}

std::optional<double> MeasuredMemory::reported_bytes(const TrialResult& result) const {
  const auto it = metric_.empty() ? result.metrics.end() : result.metrics.find(metric_);
  if (it == result.metrics.end() || !std::isfinite(it->second)) return std::nullopt;
  return metric_bytes(metric_, it->second);
}

std::optional<double> MeasuredMemory::share_of_budget(const TrialResult& result) const {
  if (result.status != TrialStatus::kOk || budget_ <= 0) return std::nullopt;
  const std::optional<double> bytes = reported_bytes(result);
  if (!bytes) return std::nullopt;
  return *bytes / budget_;
}

std::optional<std::string> MeasuredMemory::over_budget(const Config& config) const {
  if (budget_ <= 0) return std::nullopt;
  // Monotone: a measured configuration at most as hungry already reported more than the budget.
  for (const auto& [lean, p] : measured_) {
    if (p.bytes > budget_ && dominance_.at_least_as_hungry(config, lean)) {
      return "predicted out of memory: trial " + std::to_string(p.index) +
             " needs less and reported " + metric_ + " of " + mib(p.bytes) +
             ", over the budget of " + mib(budget_);
    }
  }
  // Affine in the batch size at the same other knobs.
  const std::optional<Fit> fit = fitted(config);
  if (!fit || fit->bytes < budget_ * kMargin) return std::nullopt;
  std::string from;
  for (const Point& p : *fit->from) from += (from.empty() ? "" : ", ") + std::to_string(p.index);
  return "predicted out of memory: " + mib(fit->bytes) + " over the budget of " + mib(budget_) +
         " (" + metric_ + " fitted over " + batch_knob_ + " from trials " + from + ")";
}

std::string MeasuredMemory::misses() const {
  const std::pair<Config, int64_t>* first = nullptr;
  double predicted = 0;
  for (const auto& oom : out_of_memory_) {
    const std::optional<Fit> fit = fitted(oom.first);
    // Within the margin of the budget, a fit may be right and the boundary merely near.
    if (fit && fit->bytes * kMargin < budget_ && (!first || oom.second < first->second)) {
      first = &oom;
      predicted = fit->bytes;
    }
  }
  if (!first) return "";
  return metric_ + " under-predicts what the budget caps: trial " + std::to_string(first->second) +
         " (" + first->first.to_string() + ") ran out of memory where its fit over " + batch_knob_ +
         " predicted " + mib(predicted) + ", under the budget of " + mib(budget_);
}

std::optional<MeasuredMemory::Fit> MeasuredMemory::fitted(const Config& config) const {
  const auto batch = batch_of(config);
  const auto group = batch ? by_group_.find(group_of(config)) : by_group_.end();
  if (!batch || group == by_group_.end()) return std::nullopt;
  const std::vector<Point>& points = group->second;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : points) {
    n += 1;
    sx += p.batch;
    sy += p.bytes;
    sxx += p.batch * p.batch;
    sxy += p.batch * p.bytes;
  }
  const double det = n * sxx - sx * sx;
  if (n < 2 || det <= 0) return std::nullopt;  // one batch size: no slope to extrapolate with
  const double slope = (n * sxy - sx * sy) / det;
  const double intercept = (sy - slope * sx) / n;
  return Fit{intercept + slope * *batch, &points};
}

}  // namespace slapo::tuner
