#include "runners/command_runner.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/process.h"
#include "core/ranks.h"
#include "core/read_file.h"
#include "core/text.h"

namespace slapo::runners {

namespace {

// A private directory for one trial's metrics files, removed with this object.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/slapo-trial-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  // The metrics file of `rank` (empty when the directory could not be made).
  std::string metrics_file(int rank) const {
    return path_.empty() ? "" : path_ + "/rank" + std::to_string(rank) + ".jsonl";
  }

 private:
  std::string path_;
};

// What a rank wrote to its metrics file (none when it wrote nothing), read up to `max_bytes`.
void add_metrics_file(const std::string& path, size_t max_bytes, MetricReports* reports) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return;
  const std::string origin = "$" + std::string(kMetricsFileEnv);
  try {
    reports->add_json_lines(
        read_file_capped(path, max_bytes, "the metrics file", "report metrics there, not logs"),
        false, origin);
  } catch (const Error& e) {
    reports->problems.push_back(origin + ": " + e.what());
  }
}

// The first line of `output` that matches `re`, trimmed to 200 characters.
std::string matching_line(const std::string& output, const std::regex& re) {
  std::smatch m;
  if (!std::regex_search(output, m, re)) return "";
  const size_t at = static_cast<size_t>(m.position(0));
  const size_t begin = output.rfind('\n', at);
  const size_t end = output.find('\n', at);
  const size_t from = begin == std::string::npos ? 0 : begin + 1;
  return output.substr(
      from, std::min<size_t>(200, (end == std::string::npos ? output.size() : end) - from));
}

}  // namespace

CommandRunner::CommandRunner(CommandOptions options)
    : options_(std::move(options)), stopping_(options_.early_stopping) {
  SLAPO_CHECK(!options_.argv.empty(), ErrorCode::kInvalidArgument,
              "command runner: no command to run");
  for (const MetricPattern& pattern : options_.metrics) check_metric_pattern(pattern);
  try {
    const std::regex oom(options_.oom_pattern, std::regex::icase);
  } catch (const std::regex_error& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, "out-of-memory pattern '", options_.oom_pattern,
               "': not a valid regular expression: ", e.what());
  }
  SLAPO_CHECK(options_.metric_rank == kAllRanks ||
                  (options_.metric_rank >= 0 && options_.metric_rank < options_.nproc),
              ErrorCode::kInvalidArgument, "metric rank ", options_.metric_rank, ": the job has ",
              options_.nproc, " rank(s), numbered from 0");
}

std::vector<std::string> placeholders(const std::vector<std::string>& argv) {
  static const std::regex re(R"(\{([A-Za-z_][A-Za-z0-9_]*)\})");
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& arg : argv) {
    for (auto it = std::sregex_iterator(arg.begin(), arg.end(), re); it != std::sregex_iterator();
         ++it) {
      if (seen.insert((*it)[1].str()).second) names.push_back((*it)[1].str());
    }
  }
  return names;
}

namespace {

std::string value_text(const Value& value, const CommandOptions& o) {
  if (const bool* b = std::get_if<bool>(&value)) return *b ? o.bool_true : o.bool_false;
  return to_plain_string(value);
}

}  // namespace

std::vector<std::string> CommandRunner::argv_for(const Config& config) const {
  std::vector<std::string> argv;
  for (std::string arg : options_.argv) {
    for (const auto& [name, value] : config.entries()) {
      const std::string placeholder = "{" + name + "}";
      const std::string text = value_text(value, options_);
      for (size_t pos = 0; (pos = arg.find(placeholder, pos)) != std::string::npos;
           pos += text.size())
        arg.replace(pos, placeholder.size(), text);
    }
    argv.push_back(arg);
  }
  return argv;
}

std::map<std::string, std::string> CommandRunner::env_for(const Config& config) const {
  std::map<std::string, std::string> env = options_.env;
  for (const auto& [name, value] : config.entries()) {
    std::string key = "SLAPO_";
    for (char c : name) key += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    env[key] = value_text(value, options_);
  }
  return env;
}

std::string CommandRunner::command_line(const Config& config) const {
  std::string line;
  if (!options_.cwd.empty()) line += "cd " + shell_quote(options_.cwd) + " && ";
  for (const auto& [name, value] : env_for(config)) line += name + "=" + shell_quote(value) + " ";
  const std::vector<std::string> argv = argv_for(config);
  std::vector<std::string> words;
  size_t first = 0;
  if (options_.nproc > 1) {
    // torchrun sets what the runner sets for each rank; a python script runs under it as is.
    words = {"torchrun", "--standalone", "--nproc-per-node", std::to_string(options_.nproc)};
    const bool python = argv[0].find("python") != std::string::npos && argv.size() > 1;
    if (python)
      first = 1;
    else
      words.push_back("--no-python");
  }
  for (size_t i = first; i < argv.size(); ++i) words.push_back(shell_quote(argv[i]));
  for (size_t i = 0; i < words.size(); ++i) line += (i ? " " : "") + words[i];
  return line;
}

TrialResult CommandRunner::judge(const ProcessResult& p, const MetricReports& reports,
                                 bool reports_metrics, const std::string& stop_reason) const {
  if (!p.started) return failed_trial(TrialStatus::kRuntimeError, p.error);
  const std::string output = p.out + p.err;
  const bool exited_badly = p.signal != 0 || p.exit_code != 0;
  const std::regex oom_re(options_.oom_pattern, std::regex::icase);
  TrialResult r;
  std::string oom_line;
  const bool oom_exit = options_.oom_exit_code && p.exit_code == *options_.oom_exit_code;
  if (exited_badly || (reports_metrics && reports.final_metrics.empty()))
    oom_line = matching_line(output, oom_re);
  const std::string last = last_line(p.err.empty() ? p.out : p.err);
  if (p.interrupted) {
    r = failed_trial(TrialStatus::kInterrupted, "interrupted by the user");
  } else if (p.stopped) {
    r = failed_trial(TrialStatus::kPruned,
                     stop_reason.empty() ? "stopped early with its peers" : stop_reason);
  } else if (p.peer_failed) {
    r = failed_trial(TrialStatus::kRuntimeError, kEndedByPeerError);
  } else if (p.timed_out) {
    r = failed_trial(TrialStatus::kTimeout,
                     "killed after the time limit of " + std::to_string(options_.timeout_s) + " s");
  } else if (p.oom_killed) {
    r = failed_trial(TrialStatus::kOom,
                     "killed by the kernel's out-of-memory killer (SIGKILL; /proc/vmstat oom_kill "
                     "went up)");
  } else if (oom_exit || !oom_line.empty()) {
    r = failed_trial(TrialStatus::kOom,
                     oom_exit ? "out of memory (exit code " + std::to_string(p.exit_code) + ")"
                              : "out of memory: " + oom_line);
  } else if (p.signal != 0) {
    r = failed_trial(TrialStatus::kCrashed, "command killed by " + signal_name(p.signal) +
                                                (last.empty() ? "" : ": " + last));
  } else if (p.exit_code != 0) {
    r = failed_trial(TrialStatus::kRuntimeError, "command exited with code " +
                                                     std::to_string(p.exit_code) +
                                                     (last.empty() ? "" : ": " + last));
  } else if (reports_metrics && !reports.problems.empty()) {
    r = failed_trial(TrialStatus::kInvalidMetric, reports.problems.front());
  } else if (reports_metrics && reports.final_metrics.empty()) {
    std::string regexes;
    for (const MetricPattern& m : options_.metrics)
      regexes += (regexes.empty() ? "/" : ", /") + m.regex + "/";
    r = failed_trial(TrialStatus::kRuntimeError,
                     "the command reported no metric: no output line matched " +
                         (regexes.empty() ? std::string("(no regex)") : regexes) + ", and no '" +
                         kMetricsLinePrefix + "' line or $" + kMetricsFileEnv + " report came");
  } else if (reports_metrics) {
    r.metrics = reports.final_metrics;
  }
  r.metrics[metric::kWallS] = p.duration_s;
  if (r.status != TrialStatus::kOk) r.log_tail = tail_lines(output, options_.log_lines);
  return r;
}

TrialResult CommandRunner::run_one(const Config& config) {
  const ScratchDir scratch;
  const int watched = options_.metric_rank == kAllRanks ? 0 : options_.metric_rank;
  LiveReports live(scratch.metrics_file(watched));
  std::atomic<bool> stop{false};
  std::string stop_reason;
  const auto options_for = [&](int rank, ProcessOptions* po) {
    po->env[kMetricsFileEnv] = scratch.metrics_file(rank);
    po->cwd = options_.cwd;
    po->address_space_bytes = options_.memory_budget_bytes;
    po->timeout_s = options_.timeout_s;
    if (!options_.early_stopping.enabled) return;
    if (rank == watched) {
      po->watch = [&](const std::string& chunk) {
        if (live.feed(chunk)) {
          if (auto why = stopping_.should_stop(live.intermediate())) {
            stop_reason = *why;
            stop = true;
          }
        }
        return stop.load();
      };
    } else {
      po->watch = [&](const std::string&) { return stop.load(); };
    }
  };
  // A configuration whose arguments or environment the system refuses (E2BIG) fails alone, saying
  // what is too long.
  const auto explain_start = [&](ProcessResult& p) {
    if (p.started || p.start_errno != E2BIG) return;
    size_t argv_bytes = 0;
    for (const std::string& a : argv_for(config)) argv_bytes += a.size() + 1;
    std::string longest;
    size_t longest_bytes = 0;
    for (const auto& [name, value] : env_for(config)) {
      if (name.size() + value.size() + 2 > longest_bytes)
        longest = name, longest_bytes = name.size() + value.size() + 2;
    }
    p.error += " (the arguments are " + std::to_string(argv_bytes) +
               " bytes; the longest variable, " + longest + ", " + std::to_string(longest_bytes) +
               " bytes; one argument or variable may hold at most 128 KiB)";
  };
  std::vector<ProcessResult> processes;
  if (options_.nproc <= 1) {
    ProcessOptions po;
    po.env = env_for(config);
    options_for(0, &po);
    processes.push_back(run_process(argv_for(config), po));
  } else {
    RanksOptions ranks;
    ranks.nproc = options_.nproc;
    ranks.argv = argv_for(config);
    ranks.env = env_for(config);
    ranks.timeout_s = options_.timeout_s;
    ranks.per_rank = options_for;
    processes = run_ranks(ranks);
  }
  for (ProcessResult& p : processes) explain_start(p);
  // What each rank reported.
  std::vector<MetricReports> reports(processes.size());
  for (size_t rank = 0; rank < processes.size(); ++rank) {
    const std::string who = processes.size() > 1 ? "rank " + std::to_string(rank) + " " : "";
    reports[rank].add_regex_matches(processes[rank].out, processes[rank].err, options_.metrics);
    reports[rank].add_json_lines(processes[rank].out, true, who + "standard output");
    add_metrics_file(scratch.metrics_file(static_cast<int>(rank)), kMaxMetricsFileBytes,
                     &reports[rank]);
  }
  std::vector<TrialResult> per_rank;
  for (size_t rank = 0; rank < processes.size(); ++rank) {
    const bool counts =
        options_.metric_rank == kAllRanks || static_cast<int>(rank) == options_.metric_rank;
    per_rank.push_back(judge(processes[rank], reports[rank], counts, stop_reason));
  }
  TrialResult result = per_rank.size() == 1 ? per_rank[0] : combine_ranks(per_rank);
  if (per_rank.size() > 1 && result.status == TrialStatus::kOk) {
    if (options_.metric_rank == kAllRanks) {
      // Each metric every rank reported, averaged over the ranks.
      result.metrics.clear();
      for (const auto& [name, value] : per_rank[0].metrics) {
        double sum = 0;
        size_t n = 0;
        for (const TrialResult& r : per_rank) {
          const auto it = r.metrics.find(name);
          if (it != r.metrics.end()) sum += it->second, ++n;
        }
        if (n == per_rank.size()) result.metrics[name] = sum / static_cast<double>(n);
      }
    } else {
      result = per_rank[static_cast<size_t>(options_.metric_rank)];
    }
    result.metrics[metric::kWallS] = per_rank[0].metrics[metric::kWallS];
  }
  const std::vector<IntermediateReport>& curve = reports[static_cast<size_t>(watched)].intermediate;
  if (result.status == TrialStatus::kOk) {
    stopping_.add_finished(curve);
  } else if (result.status == TrialStatus::kPruned && !curve.empty()) {
    // What it had reached when it was stopped, for the record.
    for (const auto& [name, value] : curve.back().values) result.metrics[name] = value;
  }
  return result;
}

std::vector<TrialResult> CommandRunner::run(const std::vector<Config>& candidates) {
  std::vector<TrialResult> results;
  for (const Config& config : candidates) results.push_back(run_one(config));
  return results;
}

}  // namespace slapo::runners
