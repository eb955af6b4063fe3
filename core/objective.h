#pragma once
// Objective: the metric a tuning task optimizes and in which direction. The one place that
// answers "is this value better than that one?" — the tuner, the database's ranking, the report
// and the CLI all ask it.

#include <optional>
#include <string>

namespace slapo {

struct Objective {
  std::string metric;     // a name from core/metrics.h, or a command's own metric
  bool minimize = false;  // smaller is better (times, memory); larger otherwise (rates)

  // True when `a` is strictly better than `b`.
  bool better(double a, double b) const { return minimize ? a < b : a > b; }
  // True when `a` is a value and either `b` has none or `a` is strictly better.
  bool better(std::optional<double> a, std::optional<double> b) const {
    return a.has_value() && (!b.has_value() || better(*a, *b));
  }
  // "minimize" or "maximize".
  const char* verb() const { return minimize ? "minimize" : "maximize"; }
  // "min step_ms_median", "max samples_per_s".
  std::string to_string() const { return (minimize ? "min " : "max ") + metric; }
};

}  // namespace slapo
