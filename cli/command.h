#pragma once
// The shape of every `slapo-tune` command.
//
// A command is a plain options struct, a parser and a runner, in one file named after it
// (cli/<name>_command.cc), declared in cli/commands.h and listed in cli/commands.cc:
//
//   XOptions parse_x(const Args& args);                     // Error / boost error for bad input
//   int run_x(const XOptions& options, std::ostream& out, std::ostream& err);   // an exit code
//
// Parsing only reads and checks the arguments (unit-tested by comparing structs, bad input
// included); running does the work with the streams passed in. `--help` parses to options with
// help = true, and running them prints the command's help. Commands that act are verbs
// (`slapo-tune trial`); commands that inspect a collection are a noun and a verb
// (`slapo-tune db trials`, `slapo-tune space count`, `slapo-tune primitives show`).

#include <iosfwd>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace slapo::cli {

// Exit codes of slapo-tune.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;        // the work itself failed
constexpr int kExitUsage = 2;          // bad input or usage
constexpr int kExitInterrupted = 130;  // SIGINT/SIGTERM: what was recorded is kept

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  // parse + run. May throw slapo::Error or boost::program_options::error, which main maps to exit
  // codes.
  int (*main)(const Args& args, std::ostream& out, std::ostream& err);
};

// Every command, in the order `slapo-tune --help` lists them.
const std::vector<Command>& commands();

// Options structs compare field by field: each has `auto tie() const { return std::tie(...); }`.
template <typename T>
auto operator==(const T& a, const T& b) -> decltype(a.tie() == b.tie()) {
  return a.tie() == b.tie();
}
template <typename T>
auto operator!=(const T& a, const T& b) -> decltype(a.tie() == b.tie()) {
  return !(a == b);
}

}  // namespace slapo::cli
