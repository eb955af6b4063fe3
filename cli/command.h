#pragma once
// One `slapo-tune` subcommand. Each lives in its own file and is listed in main.cc.

#include <iosfwd>
#include <string>
#include <vector>

namespace slapo::cli {

// Exit codes of slapo-tune.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // the work itself failed
constexpr int kExitUsage = 2;    // bad input or usage

struct Command {
  const char* name;
  const char* summary;
  // `args` are the arguments after the subcommand's name. Returns an exit code; may throw
  // slapo::Error or boost::program_options::error, which main maps to exit codes.
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
};

int run_space(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_verify(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_primitives(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_trial(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_worker(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_db(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_replay(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_single_device(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_single_node(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_report(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_version(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The path of the running slapo-tune (for starting workers).
std::string self_executable();

}  // namespace slapo::cli
