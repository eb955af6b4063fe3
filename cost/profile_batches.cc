#include "cost/profile_batches.h"

#include <cmath>

namespace slapo::cost {

int64_t middle_batch(int64_t lo, int64_t hi, const std::vector<int64_t>& taken) {
  const double geometric = std::sqrt(static_cast<double>(lo) * static_cast<double>(hi));
  int64_t best = 0;
  double best_distance = 0;
  for (int64_t b : taken) {
    if (b <= lo || b >= hi) continue;
    const double distance = std::abs(std::log(static_cast<double>(b) / geometric));
    // As near within rounding (8 and 16 around 4 and 32): the smaller, the cheaper to measure.
    const bool as_near = std::abs(distance - best_distance) < 1e-9;
    if (best == 0 || (!as_near && distance < best_distance) || (as_near && b < best)) {
      best = b;
      best_distance = distance;
    }
  }
  if (best > 0) return best;
  // Nothing the space runs lies between: a step there would predict no configuration (a step's
  // time is a polyline through the measured batches, its peak measured at lo and hi).
  return taken.empty() ? static_cast<int64_t>(std::llround(geometric)) : 0;
}

int64_t taken_at_most(int64_t at_most, int64_t at_least, const std::vector<int64_t>& taken) {
  int64_t best = 0;
  for (int64_t b : taken) {
    if (b >= at_least && b <= at_most && b > best) best = b;
  }
  return best > 0 ? best : at_most;
}

}  // namespace slapo::cost
