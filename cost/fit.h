#pragma once
// Small fits the cost model shares.

#include <utility>
#include <vector>

namespace slapo::cost {

// The least-squares line y = a + b·x through the points, as (a, b). REQUIRES: two distinct x.
std::pair<double, double> fit_line(const std::vector<std::pair<double, double>>& xy);

// y at x on the polyline through `points` (ascending x, at least two): interpolated inside,
// extrapolated along the nearest segment outside.
double polyline_at(const std::vector<std::pair<double, double>>& points, double x);

}  // namespace slapo::cost
