#pragma once
// The whole slapo-tune command line as a function: slapo-tune's main is this call alone, and a
// program that registers models of its own (models/model_registry.h) calls it to get every
// command — single-device, single-node, trial, verify, predict, plan, db, replay, report, ... —
// with every runner: workers, ranks and the fork server run the same program again.
//
//   int main(int argc, char** argv) {
//     slapo::models::register_family(...);
//     slapo::models::register_preset(...);
//     return slapo::cli::run_command_line(argc, argv);
//   }

namespace slapo::cli {

// Runs the command argv[1..] names; returns the exit code (0 ok, 1 the work failed, 2 bad input or
// usage, 130 interrupted). Errors are printed as one line on standard error.
int run_command_line(int argc, char** argv);

}  // namespace slapo::cli
