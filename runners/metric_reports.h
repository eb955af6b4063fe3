#pragma once
// What a training command reports, read three ways (docs/runners.md, "Metrics from a command"):
//
//   - named regular expressions over its standard output (`--metric NAME=REGEX`, the last match of
//     each, one capture group around the number);
//   - `slapo-metrics: {"samples_per_s": 812.5, "peak_bytes": 1.2e9}` lines on standard output;
//   - the same JSON objects, one per line, in the file named by $SLAPO_METRICS_FILE.
//
// A JSON report with a "step" key is an *intermediate* value (the tuner may stop the trial early
// on it); the others are final, later ones overriding earlier ones. slapo_tune.report() of the
// Python helper (python/slapo_tune.py) writes them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace slapo::runners {

// The prefix of a structured report line.
inline constexpr const char* kMetricsLinePrefix = "slapo-metrics:";
// The environment variable naming the file a command may write its reports to.
inline constexpr const char* kMetricsFileEnv = "SLAPO_METRICS_FILE";
// The most of that file read (a report is a line of numbers per step, not a log).
inline constexpr size_t kMaxMetricsFileBytes = 16 << 20;

struct MetricPattern {
  std::string name;
  std::string regex;  // one capture group around the number
  bool operator==(const MetricPattern& o) const { return name == o.name && regex == o.regex; }
};

// Parses `NAME=REGEX` (the flag's form). Throws Error(kInvalidArgument) naming `flag` for a
// missing name, a name that is not [A-Za-z_][A-Za-z0-9_.]*, or a regex that does not compile or
// has no capture group.
MetricPattern parse_metric_pattern(const std::string& text, const std::string& flag);
// Throws as above for a pattern whose regex does not compile or has no capture group.
void check_metric_pattern(const MetricPattern& pattern);
// The pattern a command's metric is read with when no regex names it: `NAME: N` on a line
// (`throughput: N` for the default metric). `--objective val_loss` alone once read the
// `throughput: N` line into val_loss.
MetricPattern default_metric_pattern(const std::string& name);

struct IntermediateReport {
  int64_t step = 0;
  std::map<std::string, double> values;
};

// Everything a command reported, merged.
struct MetricReports {
  std::map<std::string, double> final_metrics;
  std::vector<IntermediateReport> intermediate;  // in the order reported
  std::vector<std::string> problems;             // malformed reports and non-finite values, named

  // Reads the JSON reports in `text` (lines with the prefix when `prefixed`, else every non-empty
  // line, as in the metrics file). `origin` names where in a problem ("standard output line 12").
  void add_json_lines(const std::string& text, bool prefixed, const std::string& origin);
  // Applies each pattern to standard output: the last match of each is a final metric; a pattern
  // that matches nothing there is applied to standard error (Python's logging writes there). The
  // captured number must be a number whole: "1.2.3e" is not 1.2.
  void add_regex_matches(const std::string& out, const std::string& err,
                         const std::vector<MetricPattern>& patterns);
};

// Incremental reading of the structured reports of a running command: feed its output as it
// comes (partial lines are kept until their newline) and poll its metrics file.
class LiveReports {
 public:
  explicit LiveReports(std::string metrics_file = "") : file_(std::move(metrics_file)) {}
  // Takes new output; returns true when a new intermediate report arrived (there or in the file).
  bool feed(const std::string& chunk);
  const std::vector<IntermediateReport>& intermediate() const { return reports_.intermediate; }

 private:
  bool poll_file();
  std::string file_;
  uint64_t file_offset_ = 0;
  std::string partial_, file_partial_;
  MetricReports reports_;
};

}  // namespace slapo::runners
