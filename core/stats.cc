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

namespace {

// Each value's rank (0-based), tied values their mean rank.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = static_cast<double>(i + j) / 2;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    ma += ra[i] / n;
    mb += rb[i] / n;
  }
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : std::nan("");
}

Line repeated_median_line(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> slopes;  // of each point that shares an x with none of the others: none
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> from_i;
    for (size_t j = 0; j < x.size(); ++j) {
      if (x[j] != x[i]) from_i.push_back((y[j] - y[i]) / (x[j] - x[i]));
    }
    if (!from_i.empty()) slopes.push_back(median(std::move(from_i)));
  }
  Line line;
  line.slope = slopes.empty() ? 0 : median(std::move(slopes));
  std::vector<double> intercepts;
  for (size_t i = 0; i < x.size(); ++i) intercepts.push_back(y[i] - line.slope * x[i]);
  line.intercept = median(std::move(intercepts));
  return line;
}

}  // namespace slapo
