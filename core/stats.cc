#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace slapo {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos)), hi = static_cast<size_t>(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

double robust_z(const std::vector<double>& v, double x, double min_mad) {
  const double m = median(v);
  std::vector<double> deviations;
  deviations.reserve(v.size());
  for (double e : v) deviations.push_back(std::fabs(e - m));
  const double mad = std::max(median(std::move(deviations)), min_mad);
  if (mad == 0) return x == m ? 0 : (x > m ? HUGE_VAL : -HUGE_VAL);
  return 0.6745 * (x - m) / mad;
}

}  // namespace slapo
