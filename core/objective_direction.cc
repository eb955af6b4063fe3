#include "core/objective_direction.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/metric_units.h"
#include "core/metrics.h"
#include "core/text.h"

namespace slapo {

std::optional<bool> builtin_minimize(const std::string& metric) {
  for (const char* rate :
       {metric::kSamplesPerS, metric::kTokensPerS, metric::kTflops, metric::kThroughput}) {
    if (metric == rate) return false;
  }
  for (const char* cost :
       {metric::kStepMsMedian, metric::kStepMsP10, metric::kStepMsP90, metric::kPeakBytes,
        metric::kLossFirst, metric::kLossLast, metric::kBuildMs, metric::kTrainMs,
        metric::kMaxRssBytes, metric::kPageFaultsPerStep, metric::kWallS, metric::kCommShare,
        metric::kBubbleShare}) {
    if (metric == cost) return true;
  }
  return std::nullopt;
}

bool reads_smaller_is_better(const std::string& metric) {
  std::string name = metric;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // A rate first: images_per_sec ends in a time unit too.
  for (const char* rate : {"per_s", "per_sec", "per_second", "/s"}) {
    if (ends_with(name, rate)) return false;
  }
  if (name.find("throughput") != std::string::npos) return false;
  for (const char* word : {"loss", "error", "latency", "time", "memory", "perplexity"}) {
    if (name.find(word) != std::string::npos) return true;
  }
  for (const char* unit : {"_ms", "_us", "_ns", "_s", "_sec", "_seconds"}) {
    if (ends_with(name, unit)) return true;
  }
  return metric_bytes(name, 1).has_value();  // a memory unit
}

ResolvedObjective resolve_objective(const std::string& metric, bool minimize, bool maximize) {
  SLAPO_CHECK(!(minimize && maximize), ErrorCode::kInvalidArgument,
              "--minimize and --maximize: give one of them");
  ResolvedObjective r;
  r.objective.metric = metric;
  if (minimize || maximize) {
    r.objective.minimize = minimize;
    return r;
  }
  if (const std::optional<bool> known = builtin_minimize(metric)) {
    r.objective.minimize = *known;
    return r;
  }
  if (reads_smaller_is_better(metric)) {
    r.note = "maximizing " + metric +
             ", which reads like a loss, a time or a size: pass --minimize if smaller is better "
             "(--maximize to keep this without the note)";
  }
  return r;
}

}  // namespace slapo
