#pragma once
// Order statistics of measurements: step times within a trial, a trial's repeated objectives.

#include <vector>

namespace slapo {

// The p-quantile (0 ≤ p ≤ 1) with linear interpolation between the two nearest ranks.
// REQUIRES: !v.empty().
double percentile(std::vector<double> v, double p);
// percentile(v, 0.5): the middle value, or the mean of the two middle ones.
double median(std::vector<double> v);
// How far `x` lies from the values `v`, robustly: 0.6745 · (x − median) / MAD, the median absolute
// deviation (Iglewicz and Hoaglin: |z| > 3.5 is an outlier). The MAD is floored at `min_mad`, so
// values that agree to the digit do not make every small difference an outlier; with a MAD of 0,
// any other x is infinitely far. REQUIRES: !v.empty().
double robust_z(const std::vector<double>& v, double x, double min_mad = 0);
// Spearman's rank correlation of paired values (tied values share their mean rank): 1 when `b`
// orders the pairs as `a` does, −1 when in reverse; NaN when either is constant.
// REQUIRES: a.size() == b.size() >= 2.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// A straight line y = intercept + slope · x.
struct Line {
  double intercept = 0, slope = 0;
  double at(double x) const { return intercept + slope * x; }
};
// Siegel's repeated-median line through the points (x[i], y[i]): the slope is the median over the
// points of the median slope from each to the others (pairs of equal x skipped), the intercept the
// median of y − slope · x. Unlike least squares, one wild point among four or more does not move
// it (a breakdown point of 50%). With one distinct x: a flat line at the median of y.
// REQUIRES: x.size() == y.size() >= 1.
Line repeated_median_line(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace slapo
