// The summary's `noise:` line.

#include "cli/noise_line.h"

#include <iomanip>
#include <sstream>

#include "tuner/tuner.h"

namespace slapo::cli {

std::string noise_line(std::optional<double> spread, bool confirmed) {
  if (!spread) return "";
  std::ostringstream out;
  out << "noise: a trial's steps spread by a median " << std::fixed << std::setprecision(1)
      << 100 * *spread << "% (p90 - p10 over the median)";
  if (*spread > tuner::kNoisyStepSpread) {
    out << " - a noisy machine (over " << 100 * tuner::kNoisyStepSpread
        << "%): one trial cannot tell configurations that close apart; run on an idle machine"
        << (confirmed ? "" : " or re-measure the best with --confirm K");
  }
  out << "\n";
  return out.str();
}

}  // namespace slapo::cli
