// The summary's `noise:` line.

#include "cli/noise_line.h"

#include <iomanip>
#include <sstream>

#include "tuner/tuner.h"

namespace slapo::cli {

std::string noise_line(std::optional<double> spread, bool confirmed,
                       std::optional<double> remeasured) {
  if (!spread && !remeasured) return "";
  std::ostringstream out;
  out << "noise: " << std::fixed << std::setprecision(1);
  if (spread)
    out << "a trial's steps spread by a median " << 100 * *spread
        << "% (p90 - p10 over the median)";
  if (spread && remeasured) out << "; ";
  if (remeasured) {
    out << "measured again, a configuration's trials lay a median " << 100 * *remeasured
        << "% apart (max - min over the median)";
  }
  const auto noisy = [](std::optional<double> s) { return s && *s > tuner::kNoisyStepSpread; };
  // The steps' spread first: a machine noisy within a trial is noisy between trials too.
  const char* what = noisy(spread)       ? " - a noisy machine"
                     : noisy(remeasured) ? " - the machine's speed moved between trials"
                                         : nullptr;
  if (what) {
    out << what << " (over " << 100 * tuner::kNoisyStepSpread
        << "%): one trial cannot tell configurations that close apart; run on an idle machine"
        << (confirmed ? "" : " or re-measure the best with --confirm K");
  }
  out << "\n";
  return out.str();
}

}  // namespace slapo::cli
