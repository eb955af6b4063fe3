#pragma once
// Order statistics of measurements: step times within a trial, a trial's repeated objectives.

#include <vector>

namespace slapo {

// The p-quantile (0 ≤ p ≤ 1) with linear interpolation between the two nearest ranks.
// REQUIRES: !v.empty().
double percentile(std::vector<double> v, double p);
// percentile(v, 0.5): the middle value, or the mean of the two middle ones.
double median(std::vector<double> v);

}  // namespace slapo
