#include "runners/sweep_steps.h"

#include <algorithm>
#include <cmath>

namespace slapo::runners {

std::vector<SweepStep> sweep_steps(int64_t micro, const std::vector<int64_t>& batches,
                                   bool warm_new_batches) {
  std::vector<SweepStep> steps = {{micro, false}};
  int64_t largest = micro;
  for (int64_t batch : batches) {
    if (warm_new_batches && batch > largest) steps.push_back({batch, false});
    largest = std::max(largest, batch);
    steps.push_back({batch, true});
  }
  return steps;
}

int timed_repeats(double first_ms, int at_least) {
  const double enough = first_ms > 0 ? std::ceil(kMinTimedMs / first_ms) : kMaxTimedRepeats;
  return std::max(at_least, static_cast<int>(std::min<double>(enough, kMaxTimedRepeats)));
}

}  // namespace slapo::runners
