#pragma once
// What `single-device` and `single-node` share: their options and the tuning run.

#include "cli/commands.h"

namespace slapo::cli {

// Declares the tuning options (every flag of both commands).
void declare_tune(TuneOptions* o, OptionSet& set);

// Parses `args` (a command after -- included) for `command` ("single-device" | "single-node");
// the caller checks what differs (the rank count).
TuneOptions parse_tune(const Args& args, const char* command);

// The help both commands print.
std::string tune_help();

// What reproduces a recorded trial by hand, ready to paste: a command's shell line (its directory,
// environment and arguments), or `slapo-tune replay` for a built-in workload.
std::string reproduce_line(const runners::RunnerSpec& spec, const db::TrialRecord& trial,
                           const std::string& db, int64_t task);

}  // namespace slapo::cli
