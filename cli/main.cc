// slapo-tune: the command-line entry point. Maps outcomes to exit codes:
// 0 ok, 1 the work itself failed, 2 bad input or usage.

#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>

#include "cli/command.h"
#include "core/error.h"

namespace {

const slapo::cli::Command kCommands[] = {
    {"single-device", "tune: search the space, measure, record every trial, report the best", slapo::cli::run_single_device},
    {"single-node", "tune with N ranks per trial on this machine (tp, pp, dp)", slapo::cli::run_single_node},
    {"report", "a task's tuning as one HTML file: heat map, convergence, top configurations", slapo::cli::run_report},
    {"space", "inspect a search space: show, count, list, sample", slapo::cli::run_space},
    {"verify", "check that a scheduled model computes what the original does", slapo::cli::run_verify},
    {"primitives", "list the schedule primitives, or print one's help", slapo::cli::run_primitives},
    {"trial", "measure one configuration (built-in workload or any command)", slapo::cli::run_trial},
    {"worker", "measure one trial and print it as JSON (used by the subprocess runner)", slapo::cli::run_worker},
    {"db", "query the tuning database: tasks, trials, best, show, export, prune", slapo::cli::run_db},
    {"replay", "re-measure a recorded configuration and compare with the record", slapo::cli::run_replay},
    {"version", "print the version, LibTorch, BLAS and machine facts", slapo::cli::run_version},
};

void print_help(std::ostream& out) {
  out << "usage: slapo-tune [--help] [--version] COMMAND [ARGS]\n\n"
         "slapo tunes how large models train, without editing the model.\n\n"
         "commands:\n";
  for (const auto& c : kCommands) {
    std::string name = c.name;
    name.resize(12, ' ');
    out << "  " << name << c.summary << "\n";
  }
  out << "\n'slapo-tune COMMAND --help' describes one command.\n"
         "exit codes: 0 ok, 1 the work failed, 2 bad input or usage\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_help(std::cerr);
    return slapo::cli::kExitUsage;
  }
  const std::string first = args[0];
  if (first == "--help" || first == "-h" || first == "help") {
    print_help(std::cout);
    return slapo::cli::kExitOk;
  }
  if (first == "--version") args[0] = "version";
  for (const auto& c : kCommands) {
    if (args[0] != c.name) continue;
    try {
      return c.run(std::vector<std::string>(args.begin() + 1, args.end()), std::cout, std::cerr);
    } catch (const slapo::Error& e) {
      std::cerr << "slapo-tune: error: " << e.what() << "\n";
      return slapo::is_user_error(e.code()) ? slapo::cli::kExitUsage : slapo::cli::kExitFailure;
    } catch (const boost::program_options::error& e) {
      std::cerr << "slapo-tune " << c.name << ": " << e.what() << " (see 'slapo-tune " << c.name
                << " --help')\n";
      return slapo::cli::kExitUsage;
    } catch (const std::exception& e) {
      std::cerr << "slapo-tune: error: " << e.what() << "\n";
      return slapo::cli::kExitFailure;
    }
  }
  std::cerr << "slapo-tune: unknown command '" << first << "' (see 'slapo-tune --help')\n";
  return slapo::cli::kExitUsage;
}
