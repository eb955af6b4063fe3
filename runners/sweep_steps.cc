#include "runners/sweep_steps.h"

#include <algorithm>

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

}  // namespace slapo::runners
