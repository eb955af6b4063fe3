#include "cost/fit.h"

#include <cstddef>

namespace slapo::cost {

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

double polyline_at(const std::vector<std::pair<double, double>>& points, double x) {
  std::size_t i = 1;
  while (i + 1 < points.size() && x > points[i].first) ++i;
  const auto& [x0, y0] = points[i - 1];
  const auto& [x1, y1] = points[i];
  return y0 + (x - x0) * (y1 - y0) / (x1 - x0);
}

}  // namespace slapo::cost
