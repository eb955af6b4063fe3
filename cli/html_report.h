#pragma once
// The HTML report of a tuning task (`slapo-tune report`): one self-contained file — inline SVG and
// CSS, no script, nothing fetched — with
//   - the line that reproduces the best configuration, and the task's noise (cli/noise_line.h);
//   - a heat map of the objective over two knobs (the best over the other knobs in each cell, by
//     the median where re-measured), every recorded value of both knobs shown; cells where every
//     trial ran out of memory, was pruned, or failed marked as such, unmeasured ones unmistakable;
//     with a legend (the colour scale and the marks);
//   - one panel per knob — the view beyond two knobs: every trial's objective against the knob's
//     values, with the spread of its measurements as an error bar where it was re-measured;
//   - the convergence over time: the best objective so far against the seconds since the first
//     trial started, failed trials marked;
//   - the top configurations with their metrics and the range of their measurements.

#include <optional>
#include <string>
#include <vector>

#include "db/database.h"

namespace slapo::cli {

struct ReportOptions {
  std::string x_knob, y_knob;  // empty: the two knobs with the most distinct values
  size_t top = 10;
};

// What the report shows of a task.
struct ReportData {
  db::TaskRecord task;
  std::vector<db::TrialRecord> trials;
  std::vector<db::Remeasurement> remeasurements;
  std::string reproduce;  // the line that reproduces the best (empty: none succeeded)
  // The task's noise: the median step spread of its ok trials (tuner::step_spread) and how far
  // its re-measured configurations' trials lay apart (tuner::remeasured_spread, tuner/noise.h);
  // absent: unknown.
  std::optional<double> step_spread, remeasured_spread;
};

// Throws Error(kInvalidArgument) naming a knob the task's configurations do not have.
std::string render_report(const ReportData& data, const ReportOptions& options);

}  // namespace slapo::cli
