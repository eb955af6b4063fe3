// The command line as a function (cli/run_command_line.h). Maps outcomes to exit codes:
// 0 ok, 1 the work itself failed, 2 bad input or usage.

#include "cli/run_command_line.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options/errors.hpp>

#include "cli/commands.h"
#include "core/error.h"
#include "runners/available_memory.h"
#include "runners/heap_policy.h"

namespace {

void print_help(std::ostream& out) {
  out << "usage: slapo-tune [--help] [--version] COMMAND [ARGS]\n\n"
         "slapo tunes how large models train, without editing the model.\n\n"
         "commands:\n";
  // The summaries in one column, two spaces past the longest name.
  size_t width = 0;
  for (const auto& c : slapo::cli::commands()) width = std::max(width, std::string(c.name).size());
  for (const auto& c : slapo::cli::commands()) {
    std::string name = c.name;
    name.resize(width + 2, ' ');
    out << "  " << name << c.summary << "\n";
  }
  out << "\n'slapo-tune COMMAND --help' describes one command.\n"
         "exit codes: 0 ok, 1 the work failed, 2 bad input or usage\n";
}

}  // namespace

namespace slapo::cli {

int run_command_line(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_help(std::cerr);
    return kExitUsage;
  }
  const std::string first = args[0];
  for (const std::string& bad : {runners::heap_choice_error(), runners::available_memory_error()}) {
    if (bad.empty()) continue;
    std::cerr << "slapo-tune: error: " << bad << "\n";
    return kExitUsage;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    print_help(std::cout);
    return kExitOk;
  }
  if (first == "--version") args[0] = "version";
  for (const auto& c : slapo::cli::commands()) {
    if (args[0] != c.name) continue;
    try {
      return c.main(std::vector<std::string>(args.begin() + 1, args.end()), std::cout, std::cerr);
    } catch (const slapo::Error& e) {
      std::cerr << "slapo-tune: error: " << e.what() << "\n";
      return slapo::is_user_error(e.code()) ? kExitUsage : kExitFailure;
    } catch (const boost::program_options::error& e) {
      std::cerr << "slapo-tune " << c.name << ": " << e.what() << " (see 'slapo-tune " << c.name
                << " --help')\n";
      return kExitUsage;
    } catch (const std::exception& e) {
      std::cerr << "slapo-tune: error: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  std::cerr << "slapo-tune: unknown command '" << first << "' (see 'slapo-tune --help')\n";
  return kExitUsage;
}

}  // namespace slapo::cli
