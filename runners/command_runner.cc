#include "runners/command_runner.h"

#include <cctype>
#include <cstdlib>
#include <regex>

#include "core/error.h"
#include "core/process.h"
#include "core/ranks.h"

namespace slapo::runners {

CommandRunner::CommandRunner(CommandOptions options) : options_(std::move(options)) {
  SLAPO_CHECK(!options_.argv.empty(), ErrorCode::kInvalidArgument,
              "command runner: no command to run");
  try {
    const std::regex re(options_.metric_regex);
    SLAPO_CHECK(re.mark_count() >= 1, ErrorCode::kInvalidArgument, "metric regex '",
                options_.metric_regex, "': needs one capture group around the number");
  } catch (const std::regex_error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "metric regex '", options_.metric_regex,
               "': not a valid regular expression: ", e.what());
  }
  try {
    const std::regex oom(options_.oom_pattern, std::regex::icase);
  } catch (const std::regex_error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "out-of-memory pattern '", options_.oom_pattern,
               "': not a valid regular expression: ", e.what());
  }
}

std::vector<std::string> CommandRunner::argv_for(const Config& config) const {
  std::vector<std::string> argv;
  for (std::string arg : options_.argv) {
    for (const auto& [name, value] : config.entries()) {
      const std::string placeholder = "{" + name + "}";
      for (size_t pos; (pos = arg.find(placeholder)) != std::string::npos;)
        arg.replace(pos, placeholder.size(), to_plain_string(value));
    }
    argv.push_back(arg);
  }
  return argv;
}

std::map<std::string, std::string> CommandRunner::env_for(const Config& config) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : config.entries()) {
    std::string key = "SLAPO_";
    for (char c : name) key += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    env[key] = to_plain_string(value);
  }
  return env;
}

TrialResult CommandRunner::judge(const ProcessResult& p) const {
  SLAPO_CHECK(p.started, ErrorCode::kNotFound, "command runner: ", p.error);
  const std::regex metric_re(options_.metric_regex);
  const std::regex oom_re(options_.oom_pattern, std::regex::icase);
  const std::string output = p.out + p.err;
  TrialResult r;
  std::smatch last;
  for (auto it = std::sregex_iterator(p.out.begin(), p.out.end(), metric_re);
       it != std::sregex_iterator(); ++it)
    last = *it;
  const bool oom = (options_.oom_exit_code && p.exit_code == *options_.oom_exit_code) ||
                   std::regex_search(output, oom_re);
  if (p.timed_out) {
    r = failed_trial(TrialStatus::kTimeout,
                     "killed after the time limit of " + std::to_string(options_.timeout_s) + " s");
  } else if (oom) {
    r = failed_trial(TrialStatus::kOom,
                     p.exit_code == 0
                         ? "the output reports running out of memory"
                         : "out of memory (exit code " + std::to_string(p.exit_code) + ")");
  } else if (p.signal != 0) {
    r = failed_trial(TrialStatus::kCrashed, "command killed by " + signal_name(p.signal));
  } else if (p.exit_code != 0) {
    r = failed_trial(TrialStatus::kRuntimeError,
                     "command exited with code " + std::to_string(p.exit_code));
  } else if (last.empty()) {
    r = failed_trial(TrialStatus::kRuntimeError,
                     "no output line matched /" + options_.metric_regex + "/");
  } else {
    char* end = nullptr;
    const std::string number = last[1].str();
    const double value = std::strtod(number.c_str(), &end);
    if (end == number.c_str())
      r = failed_trial(TrialStatus::kRuntimeError, "metric '" + number + "' is not a number");
    else
      r.metrics[options_.metric_name] = value;
  }
  r.metrics[metric::kWallS] = p.duration_s;
  if (r.status != TrialStatus::kOk) r.log_tail = tail_lines(output, options_.log_lines);
  return r;
}

std::vector<TrialResult> CommandRunner::run(const std::vector<Config>& candidates) {
  std::vector<TrialResult> results;
  for (const Config& config : candidates) {
    if (options_.nproc <= 1) {
      results.push_back(
          judge(run_process(argv_for(config), {env_for(config), options_.timeout_s})));
      continue;
    }
    RanksOptions ranks;
    ranks.nproc = options_.nproc;
    ranks.argv = argv_for(config);
    ranks.env = env_for(config);
    ranks.timeout_s = options_.timeout_s;
    std::vector<TrialResult> per_rank;
    for (const ProcessResult& p : run_ranks(ranks)) per_rank.push_back(judge(p));
    results.push_back(combine_ranks(per_rank));
  }
  return results;
}

}  // namespace slapo::runners
