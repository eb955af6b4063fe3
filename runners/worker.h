#pragma once
// The worker: the other end of the worker protocol (runners/worker_protocol.h). `slapo-tune
// worker` is a thin command around these; a program that embeds slapo can offer the same.

#include <iosfwd>
#include <string>

#include "core/trial.h"

namespace slapo::runners {

// Measures one trial in this process — or, when the process was launched as one rank of a job
// (RankEnv::present()), this rank's part of it: the configuration's layout must fill the job's
// ranks (dp, when unnamed, fills what tp and pp leave), and the threads of the workload are
// shared by the ranks. Never throws for the trial's failures: they are the result's status.
// Throws Error(kInvalidArgument) when `workload_json` or `config_json` does not parse.
TrialResult run_worker_trial(const std::string& workload_json, const std::string& config_json);

// The fork server: per request line on `in`, a forked child measures the trial (this process has
// loaded LibTorch but runs no tensor operation: a fork after an OpenMP parallel region
// deadlocks), and one response line on `out` says what the child did. Returns at end of input.
// A trial costs a fork instead of a process start that loads LibTorch.
void serve_trials(std::istream& in, std::ostream& out);

}  // namespace slapo::runners
