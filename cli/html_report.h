#pragma once
// The HTML report of a tuning task (`slapo-tune report`): one self-contained file — inline SVG and
// CSS, no script, nothing fetched — with
//   - a heat map of the objective over two knobs (the best over the other knobs in each cell),
//     cells where every trial ran out of memory, was pruned, or failed marked as such;
//   - the convergence curve: the best objective so far against the trial index, failed trials
//     marked;
//   - the top configurations with their metrics.

#include <string>
#include <vector>

#include "db/database.h"

namespace slapo::cli {

struct ReportOptions {
  std::string x_knob, y_knob;  // empty: the two knobs with the most distinct values
  size_t top = 10;
};

// Throws Error(kInvalidArgument) naming a knob the task's configurations do not have.
std::string render_report(const db::TaskRecord& task, const std::vector<db::TrialRecord>& trials,
                          const ReportOptions& options);

}  // namespace slapo::cli
