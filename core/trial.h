#pragma once
// The outcome of measuring one configuration. A failing candidate is a value, not an exception:
// the runner reports it with a closed status and keeps the reason.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace slapo {

enum class TrialStatus {
  kOk,             // measured
  kOom,            // ran out of (device or budgeted CPU) memory
  kInvalid,        // the configuration violates the space or the workload's requirements
  kScheduleError,  // the schedule could not be applied or built
  kRuntimeError,   // training failed (exception, NaN loss, non-zero exit)
  kTimeout,        // killed after its time limit
  kCrashed,        // the process died by a signal or produced garbled output
  kPruned,  // not run to its end: proven by another trial (OOM dominance), predicted out of memory,
            // or stopped early by its intermediate values (the reason says which)
  kInterrupted,    // the user interrupted the run during it: not a measurement; measured on resume
  kInvalidMetric,  // it reported a metric that is not a finite number (the error quotes where)
};

const char* to_string(TrialStatus status);
// Parses the names printed by to_string ("ok", "oom", "schedule_error", ...).
std::optional<TrialStatus> trial_status_from_string(const std::string& name);

struct TrialResult {
  TrialStatus status = TrialStatus::kOk;
  // Named measurements: "samples_per_s", "step_ms_median", "peak_bytes", ...
  std::map<std::string, double> metrics;
  std::string error;     // why it failed; empty when ok
  std::string log_tail;  // the last lines of the candidate's output, when there is one

  // {"status": "ok", "error": "", "metrics": {...}, "log_tail": ""}: one line, what a worker
  // prints and the database stores. Non-finite metrics are written as null and dropped on read.
  std::string to_json() const;
  // Throws Error(kParse) naming `origin` when `text` is not such an object.
  static TrialResult from_json(const std::string& text, const std::string& origin = "trial result");
};

// Whether smaller values of a metric are better: times and memory (a name with a token ms, s or
// bytes: step_ms_median, wall_s, peak_bytes) and losses (loss*); rates (a token per:
// samples_per_s) and everything else are better larger.
bool lower_is_better(const std::string& metric);

// A failed result with `status` and `error`.
TrialResult failed_trial(TrialStatus status, std::string error);

// Parses a byte size: 123, "512MiB", "2GiB", "1.5GB", "64k" (binary and decimal units, any case).
// Throws Error(kInvalidArgument) naming `what` otherwise.
uint64_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace slapo
