// slapo-tune single-device end to end on a tiny model and on a command.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::kTrialSpace;
using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::temp_db;

TEST(TuneCliTest, TunesRecordsAndResumes) {
  const std::string db = temp_db("resume");
  Outcome first = run("single-device --space " + kTrialSpace + " --db " + db +
                      " --runner inprocess --strategy random --trials 4 --json");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const auto summary = nlohmann::json::parse(last_line(first.out));
  EXPECT_EQ(summary["measured"].get<int>() + summary["resumed"].get<int>(), 4);
  EXPECT_TRUE(summary["best_config"].is_object());
  EXPECT_GT(summary["best_objective"].get<double>(), 0);
  // The run's noise, from the steps of the trials it measured (none on resume: unknown).
  ASSERT_TRUE(summary["step_spread_median"].is_number()) << summary.dump();
  EXPECT_GE(summary["step_spread_median"].get<double>(), 0);
  // Nothing was measured twice: how far trials of one configuration lie apart is not known.
  EXPECT_TRUE(summary["remeasured_spread_median"].is_null()) << summary.dump();
  Outcome again = run("single-device --space " + kTrialSpace + " --db " + db +
                      " --runner inprocess --strategy random --trials 4 --json");
  const auto resumed = nlohmann::json::parse(last_line(again.out));
  EXPECT_EQ(resumed["measured"], 0);
  EXPECT_EQ(resumed["resumed"], 4);
  EXPECT_EQ(resumed["best_config"], summary["best_config"]);
  EXPECT_TRUE(resumed["step_spread_median"].is_null()) << resumed.dump();
  Outcome trials = run("db trials --db " + db + " --format json");
  EXPECT_EQ(nlohmann::json::parse(trials.out).size(), 4u);
}

// A run that measures its best again says how far that configuration's trials lay apart — the
// machine's speed between trials, which no trial's own steps show — beside its steps' spread.
TEST(TuneCliTest, AConfirmedRunSaysHowFarItsTrialsLayApart) {
  const std::string db = temp_db("remeasured-spread");
  Outcome r = run("single-device --space " + kTrialSpace + " --db " + db +
                  " --runner inprocess --strategy random --trials 2 --confirm 1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("noise: a trial's steps spread by a median "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; measured again, a configuration's trials lay a median "),
            std::string::npos)
      << r.out;
  Outcome json = run("single-device --space " + kTrialSpace + " --db " + db +
                     " --runner inprocess --strategy random --trials 2 --confirm 1 --json");
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  const auto summary = nlohmann::json::parse(last_line(json.out));
  // Resumed: the task's re-measurements still say it.
  ASSERT_TRUE(summary["remeasured_spread_median"].is_number()) << summary.dump();
  EXPECT_GE(summary["remeasured_spread_median"].get<double>(), 0);
}

// A time limit spent before the first trial (here at once; on a busy machine, on the cost
// model's profiles) still measures the predicted best: a run never ends with nothing measured.
TEST(TuneCliTest, ATimeLimitSpentBeforeTheFirstTrialStillMeasuresOne) {
  const std::string db = temp_db("time-limit");
  Outcome r = run("single-device --space " + kTrialSpace + " --db " + db +
                  " --runner inprocess --strategy model --time-limit 0.001 --trials 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(summary["measured"], 1) << summary.dump();
  EXPECT_EQ(summary["stopped_because"], "time limit reached") << summary.dump();
}

// Every example space either tunes (it names a [workload]: one trial is measured, ok) or is an
// example of the space language (no workload: `space show` takes it). Files added later are
// covered: the folder is listed, not named.
TEST(TuneCliTest, EveryExampleSpaceTunesOrShows) {
  namespace fs = std::filesystem;
  int tuned = 0, shown = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(SLAPO_SOURCE_DIR) / "examples/spaces")) {
    if (entry.path().extension() != ".toml") continue;
    const std::string path = entry.path().string();
    const std::string name = entry.path().filename().string();
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.find("\n[workload]") == std::string::npos && text.rfind("[workload]", 0) != 0) {
      const Outcome r = run("space show " + path);
      EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
      ++shown;
      continue;
    }
    // The first configuration in index order, measured by the built-in runner — on the ranks its
    // layout needs, when one rank cannot run it (recorded invalid, saying how many).
    int exit_code = 0;
    const auto first_trial = [&](const std::string& tune) {
      const std::string db = temp_db("example-" + name);
      const Outcome r = run(tune + " --space " + path + " --db " + db +
                            " --strategy exhaustive --trials 1 --json");
      exit_code = r.exit_code;
      const Outcome trials = run("db trials --db " + db + " --format json");
      EXPECT_EQ(trials.exit_code, 0) << name << ": " << trials.err;
      const auto rows = nlohmann::json::parse(trials.out);
      EXPECT_EQ(rows.size(), 1u) << name << ": " << trials.out;
      return rows.empty() ? nlohmann::json::object() : rows[0];
    };
    nlohmann::json row = first_trial("single-device --runner inprocess");
    static const std::regex kNeeds(R"(needs (\d+) ranks; this run has 1)");
    std::smatch needs;
    const std::string error = row.value("error", "");
    if (row["status"] == "invalid" && std::regex_search(error, needs, kNeeds))
      row = first_trial("single-node --nproc " + needs[1].str());
    EXPECT_EQ(exit_code, 0) << name;
    EXPECT_EQ(row["status"], "ok") << name << ": " << row.dump();
    ++tuned;
  }
  EXPECT_GE(tuned, 6);  // gpt-mini-tune, the tiny trial, verify and parallel spaces
  EXPECT_GE(shown, 3);  // gpt-training, pipeline-cuts, training-64, python-gpt
}

TEST(TuneCliTest, HumanOutputEndsWithTheBestAndHowToReplayIt) {
  const std::string db = temp_db("human");
  Outcome r = run("single-device --space " + kTrialSpace + " --db " + db +
                  " --runner inprocess --trials 2 --strategy random --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tuning "), std::string::npos);
  EXPECT_NE(r.out.find("[  0] "), std::string::npos);
  EXPECT_NE(r.out.find("best: batch_size="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay it: slapo-tune replay --db " + db + " --task 1"), std::string::npos);
}

TEST(TuneCliTest, TunesACommand) {
  const std::string db = temp_db("command");
  Outcome r =
      run("single-device --space " + kTrialSpace + " --db " + db +
          " --strategy exhaustive --trials 0 --json -- sh -c 'echo throughput: $SLAPO_BATCH_SIZE'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(summary["best_objective"], 64);
  EXPECT_EQ(summary["measured"], 45);
}

// A command's own metric, named by --objective alone, is read from its own line (not the
// throughput's) and maximized unless --minimize says otherwise — with a note when its name reads
// like a loss.
TEST(TuneCliTest, ACommandsObjectiveIsReadFromItsLineAndItsDirectionSaid) {
  const std::string script =
      " -- sh -c 'echo throughput: 1000; echo val_loss: $(( 100 - $SLAPO_BATCH_SIZE ))'";
  Outcome maximized = run("single-device --space " + kTrialSpace + " --db " + temp_db("loss_max") +
                          " --strategy exhaustive --trials 0 --objective val_loss --json" + script);
  ASSERT_EQ(maximized.exit_code, 0) << maximized.out << maximized.err;
  EXPECT_NE(maximized.err.find("note: maximizing val_loss, which reads like a loss"),
            std::string::npos)
      << maximized.err;
  EXPECT_EQ(nlohmann::json::parse(last_line(maximized.out))["best_objective"], 96);  // batch 4
  Outcome minimized =
      run("single-device --space " + kTrialSpace + " --db " + temp_db("loss_min") +
          " --strategy exhaustive --trials 0 --objective val_loss --minimize --json" + script);
  ASSERT_EQ(minimized.exit_code, 0) << minimized.out << minimized.err;
  EXPECT_EQ(minimized.err.find("note:"), std::string::npos) << minimized.err;
  EXPECT_EQ(nlohmann::json::parse(last_line(minimized.out))["best_objective"], 36);  // batch 64
  Outcome both = run("single-device --space " + kTrialSpace + " --db " + temp_db("loss_both") +
                     " --objective val_loss --minimize --maximize" + script);
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--minimize and --maximize: give one of them"), std::string::npos)
      << both.err;
}

TEST(TuneCliTest, ConfirmMeasuresTheBestAgainAndRecordsIt) {
  const std::string db = temp_db("confirm");
  const std::string tune = "single-device --space " + kTrialSpace + " --db " + db +
                           " --strategy random --trials 6 --confirm 2 --confirm-rounds 2";
  Outcome r = run(tune + " --json -- sh -c 'echo throughput: $SLAPO_BATCH_SIZE'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(summary["measured"], 6);
  EXPECT_EQ(summary["remeasured"], 4);  // the best two, twice each
  EXPECT_EQ(summary["best_measurements"], 3);
  size_t rounds = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("round")) ++rounds;
  }
  EXPECT_EQ(rounds, 4u);
  // The same command again: nothing is measured, nothing re-measured.
  Outcome again = run(tune + " -- sh -c 'echo throughput: $SLAPO_BATCH_SIZE'");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("median of 3 measurements"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("again #"), std::string::npos) << again.out;
  // The database shows them: the trials table gains a median column, a trial its re-measurements.
  Outcome table = run("db trials --db " + db);
  EXPECT_NE(table.out.find("median"), std::string::npos) << table.out;
  Outcome best = run("db best --db " + db + " --format csv");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  const std::string index = best.out.substr(
      best.out.find('\n') + 1, best.out.find(',', best.out.find('\n')) - best.out.find('\n') - 1);
  Outcome show = run("db show --db " + db + " --trial " + index);
  const auto trial = nlohmann::json::parse(show.out);
  EXPECT_EQ(trial["remeasured"], 2);
  EXPECT_EQ(trial["remeasurements"].size(), 2u);
  // The report ranks by the median and says so.
  const std::string html =
      ::testing::TempDir() + "/tune_" + std::to_string(getpid()) + "_confirm.html";
  ASSERT_EQ(run("report --db " + db + " --out " + html).exit_code, 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<th>median</th><th>measured</th>"), std::string::npos);
  EXPECT_NE(page.find("rank by the median of their measurements"), std::string::npos);
  // The command reports neither a step time nor a peak: no empty columns for them.
  EXPECT_EQ(page.find("<th>step ms</th>"), std::string::npos);
  EXPECT_EQ(page.find("<th>peak MiB</th>"), std::string::npos);
  // And its noise: the command prints no step times; its throughput repeats to the digit.
  EXPECT_NE(page.find("<p class='noise'>noise: measured again, a configuration's trials lay a "
                      "median 0.0% apart"),
            std::string::npos)
      << page.substr(0, 2000);
}

// A built-in workload's trials report their peak exactly as its budget caps it (peak_bytes):
// where no cost model runs, a run learns from them which batch sizes cannot fit and never runs
// them. gpt-tiny grows by about 95 KB a sample here; the budget, 1.4 times what 32 samples need,
// leaves 64 out by a margin no fit misses.
TEST(TuneCliTest, ABuiltInWorkloadsPeaksPruneWhatCannotFitUnderItsBudget) {
  const std::string knobs = "\n[knobs]\nbatch_size = { pow2 = [2, 256], mem = \"up\" }\n";
  const std::string head =
      "[workload]\nmodel = \"gpt-tiny\"\nseq_len = 16\nwarmup = 1\nsteps = 2\nthreads = 1\n";
  const std::string free_space = slapo::testing::write_temp("peaks-free.toml", head + knobs);
  Outcome sized = run("trial --space " + free_space + " --config '{\"batch_size\": 32}' --json");
  ASSERT_EQ(sized.exit_code, 0) << sized.err;
  const double peak = nlohmann::json::parse(last_line(sized.out))["metrics"]["peak_bytes"];
  const std::string space = slapo::testing::write_temp(
      "peaks.toml",
      head + "memory_budget = " + std::to_string(static_cast<int64_t>(peak * 1.4)) + "\n" + knobs);
  const std::string db = temp_db("peaks");
  Outcome tuned = run("single-device --space " + space + " --db " + db +
                      " --runner inprocess --strategy exhaustive --json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  Outcome listed = run("db trials --db " + db + " --format json");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  int fitted = 0;
  for (const auto& t : nlohmann::json::parse(listed.out)) {
    const int64_t batch = t["config"]["batch_size"];
    EXPECT_NE(t["status"], "oom") << "ran out of memory at " << batch << " samples";
    const std::string error = t.value("error", "");
    if (error.find("peak_bytes fitted over batch_size") != std::string::npos) {
      ++fitted;
      EXPECT_GE(batch, 64) << error;
    }
    if (batch <= 32) {
      EXPECT_EQ(t["status"], "ok") << batch;
    }
  }
  EXPECT_GE(fitted, 1) << listed.out;
  // What the fit left out does run out of memory.
  Outcome beyond = run("trial --space " + space + " --config '{\"batch_size\": 64}' --json");
  EXPECT_EQ(nlohmann::json::parse(last_line(beyond.out))["status"], "oom") << beyond.out;
}

TEST(TuneCliTest, BadInput) {
  const std::string db = temp_db("bad");
  Outcome strategy =
      run("single-device --space " + kTrialSpace + " --db " + db + " --strategy hyperband");
  EXPECT_EQ(strategy.exit_code, 2);
  EXPECT_NE(
      strategy.err.find(
          "--strategy hyperband: unknown strategy 'hyperband' (strategies: auto, model, bayes,"),
      std::string::npos)
      << strategy.err;
  EXPECT_EQ(run("single-device --db " + db).exit_code, 2);
  EXPECT_EQ(run("single-device --space " + kTrialSpace + " --db " + db + " --nproc 4").exit_code,
            2);
  // A memory metric a built-in workload's trials do not report, refused before anything runs.
  Outcome metric = run("single-device --space " + kTrialSpace + " --db " + db +
                       " --runner inprocess --memory-metric peak_rss_mib");
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_NE(metric.err.find("--memory-metric peak_rss_mib: a built-in workload's trials report "
                            "peak_bytes (what its budget caps) and max_rss_bytes"),
            std::string::npos)
      << metric.err;
  EXPECT_EQ(metric.out.find("[  0]"), std::string::npos) << metric.out;
  // Counts are whole numbers >= 0: boost alone would read -1 as 2^64 - 1.
  for (const char* flag :
       {"--trials", "--patience", "--confirm", "--confirm-rounds", "--stop-after-failures"}) {
    for (const char* bad : {"-1", "2x", "many"}) {
      Outcome r =
          run("single-device --space " + kTrialSpace + " --db " + db + " " + flag + " " + bad);
      EXPECT_EQ(r.exit_code, 2) << flag << " " << bad;
      EXPECT_NE(r.err.find(std::string("the argument ('") + bad + "') for option '" + flag +
                           "' is invalid"),
                std::string::npos)
          << r.err;
    }
  }
  for (const std::string& command : {"db best --db " + db, "report --db " + db + " --out x.html"}) {
    Outcome r = run(command + " --top -2");
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("the argument ('-2') for option '--top' is invalid"), std::string::npos)
        << r.err;
  }
}

TEST(TuneCliTest, SingleNodeRunsEveryTrialAsRanksAndReplays) {
  const std::string db = temp_db("single_node");
  const std::string space =
      std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/gpt-tiny-single-node.toml";
  // auto would use the cost model and may stop before 3 trials: random measures 3.
  Outcome tuned = run("single-node --nproc 2 --space " + space + " --db " + db +
                      " --trials 3 --strategy random --json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const auto summary = nlohmann::json::parse(last_line(tuned.out));
  EXPECT_EQ(summary["measured"], 3);
  EXPECT_TRUE(summary["best_config"].is_object());
  Outcome tasks = run("db tasks --db " + db + " --format json");
  const auto task = nlohmann::json::parse(tasks.out).at(0);
  EXPECT_EQ(task["runner"], "single-node") << tasks.out;
  EXPECT_EQ(task["world_size"], 2) << tasks.out;
  Outcome replayed = run("replay --db " + db + " --task 1");
  EXPECT_EQ(replayed.exit_code, 0) << replayed.out << replayed.err;
  EXPECT_NE(replayed.out.find("samples_per_s"), std::string::npos) << replayed.out;

  Outcome missing = run("single-node --space " + space + " --db " + db);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("single-node: --nproc N (2 or more ranks per trial) is required"),
            std::string::npos);
  Outcome wrong = run("single-device --nproc 2 --space " + space + " --db " + db);
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("use slapo-tune single-node"), std::string::npos) << wrong.err;
}

TEST(ReportCliTest, OneSelfContainedHtmlFile) {
  const std::string db = temp_db("report");
  Outcome tuned = run("single-device --space " + kTrialSpace + " --db " + db +
                      " --runner inprocess --strategy random --seed 1 --trials 6 --json");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const std::string html_path =
      ::testing::TempDir() + "/report_" + std::to_string(getpid()) + ".html";
  Outcome r = run("report --db " + db + " --out " + html_path + " --x batch_size --y ckpt_ratio");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(html_path);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("<h1>Tuning report: task 1</h1>"), std::string::npos);
  EXPECT_NE(html.find("Objective over batch_size × ckpt_ratio"), std::string::npos);
  EXPECT_NE(html.find("<h2>Convergence</h2>"), std::string::npos);
  EXPECT_NE(html.find("<h2>Top configurations</h2>"), std::string::npos);
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1))
    ++svgs;
  EXPECT_EQ(svgs, 6u);  // legend, heat map, a panel per knob (3), convergence
  EXPECT_NE(html.find("The best, by hand: <code class='reproduce'>slapo-tune replay --db "),
            std::string::npos);
  size_t rows = 0;
  for (size_t at = html.find("<tr><td>"); at != std::string::npos;
       at = html.find("<tr><td>", at + 1))
    ++rows;
  EXPECT_EQ(rows, 6u);  // six ok trials in the top table
  // A built-in workload's trials report their step and peak: the table shows both.
  EXPECT_NE(html.find("<th>step ms</th><th>peak MiB</th></tr>"), std::string::npos);
  // Self-contained: nothing fetched, nothing run.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);

  Outcome knob = run("report --db " + db + " --out " + html_path + " --x nosuch");
  EXPECT_EQ(knob.exit_code, 2);
  EXPECT_NE(
      knob.err.find("report: task 1 has no knob 'nosuch' (knobs: batch_size, ckpt_ratio, attn)"),
      std::string::npos)
      << knob.err;
  Outcome no_out = run("report --db " + db);
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("report: --out FILE is required"), std::string::npos);
  Outcome no_db = run("report --db /nonexistent/x.db --out " + html_path);
  EXPECT_EQ(no_db.exit_code, 2) << no_db.err;
  Outcome no_dir = run("report --db " + db + " --out /nonexistent/r.html");
  EXPECT_EQ(no_dir.exit_code, 2) << no_dir.err;
  EXPECT_NE(no_dir.err.find("report: --out /nonexistent/r.html: cannot write it (No such file or "
                            "directory)"),
            std::string::npos)
      << no_dir.err;
}

// What a script finds in a report as headless Chromium lays it out: a copy of the page with the
// script's body (a function's, returning a string) run at its end, its result read back from the
// dumped DOM. Empty when the browser did not run it.
std::string laid_out(const std::string& html, const std::string& script) {
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t body_end = page.rfind("</body>");
  if (body_end == std::string::npos) return "";
  page.insert(body_end, "<script>document.body.setAttribute('data-layout', (() => {" + script +
                            "})());</script>");
  const std::string probe = html + ".probe.html", dom = html + ".probe.dom";
  std::ofstream(probe) << page;
  const std::string command =
      "chromium --headless --no-sandbox --disable-gpu --window-size=1300,2000 --dump-dom file://" +
      probe + " >" + dom + " 2>/dev/null";
  if (std::system(command.c_str()) != 0) return "";
  std::ifstream d(dom);
  const std::string laid((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
  std::smatch m;
  return std::regex_search(laid, m, std::regex(R"re(data-layout="([^"]*)")re")) ? m[1].str() : "";
}

// The report as a browser renders it: headless Chromium loads it, prints no error, and its DOM has
// every figure — the legend, the heat map (measured and unmeasured cells), a panel per knob with
// the error bars of re-measured trials, the convergence — and the reproducing line; and it lays
// the heat map out under its legend.
TEST(ReportCliTest, RendersInAHeadlessBrowser) {
  if (access("/usr/bin/chromium", X_OK) != 0)
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  const std::string db = temp_db("browser");
  const std::string space = slapo::testing::write_temp(
      "browser.toml",
      "[knobs]\na = { values = [1, 2, 3] }\nb = { values = [1, 2] }\nc = { values = [0, 1] }\n");
  Outcome tuned = run(
      "single-device --space " + space + " --db " + db +
      " --strategy random --seed 2 --trials 9 --confirm 2 --objective speed "
      "--metric 'speed=speed (\\S+)' -- sh -c 'echo speed $(( $SLAPO_A * 10 + $SLAPO_B + $SLAPO_C ))'");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const std::string html = ::testing::TempDir() + "/browser_" + std::to_string(getpid()) + ".html";
  ASSERT_EQ(run("report --db " + db + " --out " + html + " --x a --y b").exit_code, 0);
  const std::string dom = ::testing::TempDir() + "/browser_" + std::to_string(getpid()) + ".dom";
  const std::string log = dom + ".log";
  const std::string command =
      "chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr "
      "--v=0 --dump-dom file://" +
      html + " >" + dom + " 2>" + log;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream d(dom), l(log);
  const std::string rendered((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
  const std::string messages((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = rendered.find(what); at != std::string::npos; at = rendered.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("<svg"), 6u) << rendered.substr(0, 2000);
  EXPECT_EQ(count("class=\"knob-panel\""), 3u);
  EXPECT_EQ(count("class=\"legend\""), 1u);
  EXPECT_GE(count("class=\"error-bar\""), 2u);  // the two confirmed trials
  EXPECT_EQ(count("class=\"cell\"") + count("class=\"unmeasured\""), 6u);  // 3 × 2 cells
  EXPECT_EQ(count("seconds since the first trial started"), 1u);
  EXPECT_NE(rendered.find("SLAPO_A=3"), std::string::npos);  // the best's reproducing line
  EXPECT_EQ(messages.find("Uncaught"), std::string::npos) << messages;
  EXPECT_EQ(messages.find("CONSOLE"), std::string::npos) << messages;

  // Where the browser lays the figures out: the heat map is under its legend, at the page's left
  // margin like it — not on the legend's line, to the right of it.
  const std::string laid =
      laid_out(html,
               "const box = s => document.querySelector(s).getBoundingClientRect();"
               "const l = box('svg.legend'), m = box('svg.heat-map');"
               "return [l.left, l.bottom, m.left, m.top].map(Math.round).join(' ');");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(laid, m, std::regex(R"((-?\d+) (-?\d+) (-?\d+) (-?\d+))"))) << laid;
  const int legend_left = std::stoi(m[1]), legend_bottom = std::stoi(m[2]);
  const int map_left = std::stoi(m[3]), map_top = std::stoi(m[4]);
  EXPECT_GE(map_top, legend_bottom) << "the heat map is beside its legend, not under it";
  EXPECT_EQ(map_left, legend_left);
}

// A knob of many long values (pipeline cut sets): its panel labels every k-th value so that no two
// labels overlap as the browser lays them out (the others are named in the points' titles); the
// heat map's default axes are the knobs of numbers (micro-batches × stages), not the cut sets; and
// with the cut sets as its columns the map scrolls in its own box, not the page.
TEST(ReportCliTest, ACutKnobsLabelsDoNotOverlapAndItIsNoDefaultAxis) {
  if (access("/usr/bin/chromium", X_OK) != 0)
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs it)";
  const std::string db = temp_db("cut_labels");
  const std::string space = slapo::testing::write_temp(
      "cut_labels.toml",
      "[parameters]\nnum_layers = 12\n[knobs]\npp = { values = [2, 3] }\n"
      "cuts = { layers = \"num_layers\", stages = \"pp\", min = 3, max = 8 }\n"
      "micro_batches = { pow2 = [1, 8] }\n");
  Outcome tuned = run("single-device --space " + space + " --db " + db +
                      " --strategy random --seed 3 --trials 30 --objective speed "
                      "--metric 'speed=speed (\\S+)' -- sh -c 'echo speed $(( 100 + "
                      "$SLAPO_MICRO_BATCHES * 3 + $SLAPO_PP ))'");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.out << tuned.err;
  const std::string html =
      ::testing::TempDir() + "/cut_labels_" + std::to_string(getpid()) + ".html";
  ASSERT_EQ(run("report --db " + db + " --out " + html).exit_code, 0);
  std::ifstream in(html);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("Objective over micro_batches × pp"), std::string::npos);
  // Overlapping neighbours among each panel's labels, and each panel's labels (pp, cuts, micro).
  const std::string laid = laid_out(
      html,
      "let overlaps = 0; const ticks = [];"
      "for (const p of document.querySelectorAll('svg.knob-panel')) {"
      "  const b = [...p.querySelectorAll('text.tick')].map(t => t.getBoundingClientRect())"
      "      .sort((x, y) => x.left - y.left);"
      "  for (let i = 1; i < b.length; ++i) if (b[i].left < b[i - 1].right) ++overlaps;"
      "  ticks.push(b.length);"
      "}"
      "return overlaps + ' ' + ticks.join(' ');");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(laid, m, std::regex(R"((\d+) (\d+) (\d+) (\d+))"))) << laid;
  EXPECT_EQ(std::stoi(m[1]), 0) << "labels overlap: " << laid;
  EXPECT_EQ(std::stoi(m[2]), 2);  // pp: both values
  EXPECT_GE(std::stoi(m[3]), 2);  // cuts: some of its sets
  EXPECT_EQ(std::stoi(m[4]), 4);  // micro_batches: 1, 2, 4, 8
  // A value left unlabelled is named in its points' titles.
  EXPECT_NE(page.find("<title>trial 1, cuts = "), std::string::npos);

  // The cut sets as the heat map's columns, asked for: wider than the window, the map scrolls in
  // its own box and the page does not.
  ASSERT_EQ(run("report --db " + db + " --out " + html + " --x cuts --y pp").exit_code, 0);
  const std::string scrolled =
      laid_out(html,
               "const box = document.querySelector('.wide'), page = document.documentElement;"
               "return [box.scrollWidth > box.clientWidth, page.scrollWidth > page.clientWidth]"
               ".join(' ');");
  EXPECT_EQ(scrolled, "true false");
}

}  // namespace
