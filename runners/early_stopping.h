#pragma once
// Early stopping of a command's trial from its intermediate values: a median rule for a rate (or a
// time) that settles as training runs, after Optuna's MedianPruner.
//
// A trial reports its objective every few steps (slapo_tune.report(step=k, samples_per_s=...)).
// Once it has reported `warmup` times, and at least `min_trials` earlier trials of this run
// finished with reports of their own, each new report is compared with the median of those trials'
// values at the same step (each one's latest report at or before it). Worse than that median on two
// reports in a row — one report on a busy moment is not enough — and the trial is stopped: recorded
// as `pruned`, with the reason. The best configuration is never below the median, so it is not
// stopped; what is saved is the time of the clearly slower half.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runners/metric_reports.h"

namespace slapo::runners {

struct EarlyStoppingOptions {
  bool enabled = false;
  std::string metric;     // the objective, as reported in the intermediate values
  bool minimize = false;  // its direction
  size_t warmup = 2;      // reports of a trial before it can be stopped
  size_t min_trials = 3;  // finished trials needed to compare with
};

class MedianStopping {
 public:
  explicit MedianStopping(EarlyStoppingOptions options) : options_(std::move(options)) {}

  // A finished trial's intermediate values (of an ok trial: failures say nothing of speed).
  void add_finished(const std::vector<IntermediateReport>& reports);
  // Whether a running trial with these reports so far should stop, and why.
  std::optional<std::string> should_stop(const std::vector<IntermediateReport>& reports) const;

 private:
  // The metric's value in each report that has it, by step.
  std::map<int64_t, double> curve(const std::vector<IntermediateReport>& reports) const;
  // The median over the finished trials of their latest value at or before `step`; none when
  // fewer than min_trials have one.
  std::optional<double> median_at(int64_t step) const;

  EarlyStoppingOptions options_;
  std::vector<std::map<int64_t, double>> finished_;
};

}  // namespace slapo::runners
