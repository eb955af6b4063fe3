#include "runners/early_stopping.h"

#include <sstream>

#include "core/stats.h"

namespace slapo::runners {

std::map<int64_t, double> MedianStopping::curve(
    const std::vector<IntermediateReport>& reports) const {
  std::map<int64_t, double> c;
  for (const IntermediateReport& r : reports) {
    const auto it = r.values.find(options_.metric);
    if (it != r.values.end()) c[r.step] = it->second;
  }
  return c;
}

void MedianStopping::add_finished(const std::vector<IntermediateReport>& reports) {
  std::map<int64_t, double> c = curve(reports);
  if (!c.empty()) finished_.push_back(std::move(c));
}

std::optional<double> MedianStopping::median_at(int64_t step) const {
  std::vector<double> values;
  for (const auto& c : finished_) {
    auto it = c.upper_bound(step);
    if (it == c.begin()) continue;  // it had not reported yet at this step
    values.push_back(std::prev(it)->second);
  }
  if (values.size() < options_.min_trials || values.empty()) return std::nullopt;
  return median(values);
}

std::optional<std::string> MedianStopping::should_stop(
    const std::vector<IntermediateReport>& reports) const {
  if (!options_.enabled) return std::nullopt;
  const std::map<int64_t, double> c = curve(reports);
  if (c.size() < options_.warmup || c.size() < 2) return std::nullopt;
  const auto worse = [&](double v, double m) { return options_.minimize ? v > m : v < m; };
  auto last = std::prev(c.end());
  auto before = std::prev(last);
  const auto m_last = median_at(last->first), m_before = median_at(before->first);
  if (!m_last || !m_before) return std::nullopt;
  if (!worse(last->second, *m_last) || !worse(before->second, *m_before)) return std::nullopt;
  std::ostringstream why;
  why << "stopped early at step " << last->first << ": " << options_.metric << " " << last->second
      << " is " << (options_.minimize ? "above" : "below") << " the median " << *m_last << " of "
      << finished_.size() << " finished trials at that step (and was at step " << before->first
      << ")";
  return why.str();
}

}  // namespace slapo::runners
