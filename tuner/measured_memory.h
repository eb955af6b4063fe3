#pragma once
// Memory learned from measurements: what the trials' memory reports (a command's own metric such
// as `peak_rss_mib`; a built-in workload's `peak_bytes`, exactly what its budget caps) teach about
// the configurations not yet run, under the knobs' declared `mem` trends. For a command it is all
// slapo knows of its memory; for a built-in workload it prunes what the cost model let through,
// or, where no model runs (a strategy other than auto and model), what the trials show.
//
//   - Monotone: a configuration at least as hungry (tuner/memory_dominance.h) as a measured one
//     that reported more than the budget needs more than the budget too.
//   - Affine in batch size at fixed other knobs: with two or more batch sizes measured at the same
//     values of every other knob, peak memory is fitted as a + b·batch (least squares) and
//     predicted for the other batch sizes there. Only trials that finished teach the fit: what a
//     trial that ran out of memory reported is the peak it reached before it failed.
//
// A configuration predicted over the budget by a margin (kMargin: a fit is not a measurement) is
// recorded as pruned with the prediction as its reason and never run. The fit only prunes, never
// steers the search toward what it predicts fits: a command's reports usually miss part of what
// its budget caps (resident memory against an address-space limit: about 1 GiB of LibTorch's
// mappings on this machine), so a prediction under the budget is no promise (docs/scripts.md).
// When a trial ran out of memory where the fit (with everything measured since) puts it under the
// budget by more than the margin, the metric has been shown to miss part of it — and so to prune
// less than it could: misses() says so, for the run's summary. Out-of-memory failures without
// reports are MemoryDominance's to learn from; the tuner also starts such a run at the leanest
// corner of its first proposal (tuner.cc), so it does not open with out-of-memory trials.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/metric_units.h"
#include "core/trial.h"
#include "space/compiled_space.h"
#include "tuner/memory_dominance.h"

namespace slapo::tuner {

// A metric's value in bytes, from its name's unit (core/metric_units.h).
using slapo::metric_bytes;
// The knob peak memory is fitted over (affine in it at fixed other knobs), and the one the frontier
// ladder of `auto` climbs (tuner/model_based.h): `batch_size` with memory going up, else the first
// memory-up knob of numbers; nullptr when there is none.
const space::KnobInfo* batch_knob(const space::CompiledSpace& space);
// Whether a metric's name says it is a memory peak (has a memory unit and mentions peak, mem or
// rss): the one used when none is named.
bool looks_like_memory_metric(const std::string& name);

class MeasuredMemory {
 public:
  // `metric`: the memory metric to learn from ("" : the first one a trial reports that
  // looks_like_memory_metric). `budget_bytes` > 0.
  MeasuredMemory(const space::CompiledSpace& space, std::string metric, double budget_bytes);

  // A recorded trial (`index` in the task) and what it reported.
  void observe(const Config& config, const TrialResult& result, int64_t index);
  // Why `config` needs more than the budget, when what was measured says so; nullopt otherwise.
  std::optional<std::string> over_budget(const Config& config) const;
  const std::string& metric() const { return metric_; }
  // When `result` finished and reported the metric learnt from (a point of the fit), its value
  // as a share of the budget; nullopt otherwise. After observe(), which picks the metric when
  // none was named.
  std::optional<double> share_of_budget(const TrialResult& result) const;
  // The first trial that ran out of memory where the fit now puts it under the budget by more
  // than kMargin, as a sentence ("peak_rss_mib under-predicts what the budget caps: trial 3
  // (batch_size=160) ran out of memory where its fit over batch_size predicted 2040 MiB, under
  // the budget of 2500 MiB"); "" when there is none.
  std::string misses() const;

  // A prediction must pass the budget by this factor before a configuration is skipped.
  static constexpr double kMargin = 1.05;

 private:
  struct Point {
    double batch = 0;
    double bytes = 0;
    int64_t index = 0;
  };
  struct Fit {
    double bytes = 0;                          // predicted at the configuration's batch
    const std::vector<Point>* from = nullptr;  // the points fitted
  };
  // What `result` reported of the metric learnt from, in bytes (nullopt: nothing readable).
  std::optional<double> reported_bytes(const TrialResult& result) const;
  std::string group_of(const Config& config) const;  // every knob but the batch knob
  std::optional<double> batch_of(const Config& config) const;
  std::optional<Fit> fitted(const Config& config) const;

  const space::CompiledSpace& space_;
  MemoryDominance dominance_;
  std::string metric_;
  double budget_;
  std::string batch_knob_;  // the memory-up knob the fit is affine in ("" : none)
  std::vector<std::pair<Config, Point>> measured_;
  std::map<std::string, std::vector<Point>> by_group_;     // the finished trials, by group
  std::vector<std::pair<Config, int64_t>> out_of_memory_;  // the trials that ran out, by index
};

}  // namespace slapo::tuner
