#include "runners/sweep_steps.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace slapo::runners {

std::vector<SweepStep> sweep_steps(int64_t micro, const std::vector<int64_t>& batches,
                                   bool warm_new_batches) {
  // Two warm-up steps, as a trial by default: a step after one ran 20-30% slower (sweep_steps.h).
  std::vector<SweepStep> steps = {{micro, false, true}, {micro, false, false}};
  int64_t largest = micro;
  for (int64_t batch : batches) {
    const bool grows = batch > largest;
    largest = std::max(largest, batch);
    if (warm_new_batches && grows) {
      steps.push_back({batch, false, true});
      steps.push_back({batch, true, false});
    } else {
      steps.push_back({batch, true, grows});
    }
  }
  return steps;
}

int timed_repeats(double first_ms, int at_least) {
  const double enough = first_ms > 0 ? std::ceil(kMinTimedMs / first_ms) : kMaxTimedRepeats;
  return std::max(at_least, static_cast<int>(std::min<double>(enough, kMaxTimedRepeats)));
}

double expected_peak(const std::vector<PeakAt>& measured, int64_t batch) {
  std::vector<PeakAt> by_batch = measured;
  std::sort(by_batch.begin(), by_batch.end(),
            [](const PeakAt& a, const PeakAt& b) { return a.batch < b.batch; });
  by_batch.erase(std::unique(by_batch.begin(), by_batch.end(),
                             [](const PeakAt& a, const PeakAt& b) { return a.batch == b.batch; }),
                 by_batch.end());
  if (by_batch.size() < 2) return 0;
  const PeakAt& hi = by_batch.back();
  const PeakAt& below = by_batch[by_batch.size() - 2];
  const double slope = (hi.bytes - below.bytes) / static_cast<double>(hi.batch - below.batch);
  const double along = hi.bytes + slope * static_cast<double>(batch - hi.batch);
  if (batch <= hi.batch) return std::max(0.0, along);
  return hi.bytes + 1.5 * std::max(0.0, along - hi.bytes);
}

bool expects_growth(const std::vector<PeakAt>& measured, int64_t micro) {
  std::set<int64_t> above;
  for (const PeakAt& p : measured)
    if (p.batch > micro) above.insert(p.batch);
  return above.size() >= 2;
}

}  // namespace slapo::runners
