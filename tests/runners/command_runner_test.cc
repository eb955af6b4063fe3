// The command runner on real processes (shell scripts, and Python PyTorch scripts where
// python3-torch is installed): metrics by regex, by `slapo-metrics:` lines and by the metrics file;
// ranks; out of memory as users meet it; early stopping; interruption; the reproducing line.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "core/interrupt.h"
#include "runners/command_runner.h"
#include "runners/early_stopping.h"

namespace slapo::runners {
namespace {

Config config(const std::string& json) { return Config::from_json(json); }

bool have_torch() {
  return access("/usr/bin/python3", X_OK) == 0 &&
         std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

TrialResult run_script(const std::string& script, const Config& c = Config(),
                       CommandOptions o = {}) {
  o.argv = {"sh", "-c", script};
  if (o.timeout_s == 0) o.timeout_s = 20;
  return CommandRunner(o).run({c})[0];
}

TEST(CommandRunnerTest, KnobValuesReachTheCommandVerbatim) {
  const std::string marker = ::testing::TempDir() + "/pwned_" + std::to_string(getpid());
  CommandOptions o;
  o.argv = {"printf", "%s\\nthroughput: 7\\n", "{name}"};
  CommandRunner runner(o);
  for (const std::string& value : {"; touch " + marker, "$(touch " + marker + ")",
                                   "`touch " + marker + "`", "'\" && touch " + marker}) {
    Config c;
    c.set("name", value);
    EXPECT_EQ(runner.argv_for(c)[2], value);
    const TrialResult r = runner.run({c})[0];
    EXPECT_EQ(r.status, TrialStatus::kOk) << r.error;
    EXPECT_EQ(r.metrics.at("throughput"), 7);
  }
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "a knob value was run by a shell";
}

TEST(CommandRunnerTest, EnvironmentRegexAndStatuses) {
  CommandOptions o;
  o.argv = {"sh", "-c", "echo speed=$SLAPO_BATCH_SIZE; echo cuts $SLAPO_CUTS"};
  o.metrics = {{"speed", R"(speed=([0-9.]+))"}};
  o.metric_name = "speed";
  Config c;
  c.set("batch_size", int64_t{16});
  c.set("cuts", IntList{4, 8});
  const TrialResult r = CommandRunner(o).run({c})[0];
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.error;
  EXPECT_EQ(r.metrics.at("speed"), 16);
  EXPECT_EQ(CommandRunner(o).env_for(c).at("SLAPO_CUTS"), "4,8");

  auto status_of = [](const std::string& script, std::optional<int> oom_code = {}) {
    CommandOptions o;
    o.argv = {"sh", "-c", script};
    o.oom_exit_code = oom_code;
    o.timeout_s = 0.5;
    return CommandRunner(o).run({Config()})[0];
  };
  EXPECT_EQ(status_of("echo 'RuntimeError: CUDA out of memory' >&2; exit 1").status,
            TrialStatus::kOom);
  EXPECT_EQ(status_of("exit 42", 42).status, TrialStatus::kOom);
  EXPECT_EQ(status_of("exit 1").status, TrialStatus::kRuntimeError);
  EXPECT_EQ(
      status_of("echo done").error,
      "the command reported no metric: no output line matched /throughput:\\s*([-+0-9.eE]+)/, "
      "and no 'slapo-metrics:' line or $SLAPO_METRICS_FILE report came");
  EXPECT_EQ(status_of("kill -KILL $$").status, TrialStatus::kCrashed);
  EXPECT_EQ(status_of("sleep 10").status, TrialStatus::kTimeout);
  CommandOptions bad;
  bad.argv = {"true"};
  bad.metrics = {{"x", "no group"}};
  EXPECT_THROW(CommandRunner{bad}, Error);
}

// A metric nothing else names is read from its own `NAME: N` line, not the throughput's.
TEST(CommandRunnerTest, AnObjectiveWithoutARegexIsReadFromItsOwnLine) {
  EXPECT_EQ(default_metric_pattern("throughput").regex, kDefaultMetricRegex);
  EXPECT_EQ(default_metric_pattern("eval.loss").regex, R"(eval\.loss:\s*([-+0-9.eE]+))");
  CommandOptions o;
  o.metric_name = "val_loss";
  o.metrics = {default_metric_pattern("val_loss")};
  const TrialResult r = run_script("echo throughput: 812; echo val_loss: 2.5", Config(), o);
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.error;
  EXPECT_EQ(r.metrics.at("val_loss"), 2.5);
  EXPECT_EQ(r.metrics.count("throughput"), 0u);
}

// A metric is a number whole, wherever the command printed it.
TEST(CommandRunnerTest, MetricsAreReadStrictlyFromEitherStream) {
  const TrialResult bad = run_script("echo throughput: 1.2.3e");
  EXPECT_EQ(bad.status, TrialStatus::kInvalidMetric);
  EXPECT_EQ(bad.error, "metric 'throughput': '1.2.3e' is not a number");
  const TrialResult on_stderr = run_script("echo starting; echo throughput: 7 >&2");
  ASSERT_EQ(on_stderr.status, TrialStatus::kOk) << on_stderr.error;
  EXPECT_EQ(on_stderr.metrics.at("throughput"), 7);
  // Standard output wins when both have it.
  const TrialResult both = run_script("echo throughput: 3; echo throughput: 9 >&2");
  ASSERT_EQ(both.status, TrialStatus::kOk) << both.error;
  EXPECT_EQ(both.metrics.at("throughput"), 3);
}

TEST(CommandRunnerTest, DrivesAPythonPyTorchScript) {
  if (access("/usr/bin/python3", X_OK) != 0 ||
      std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh installs it)";
  }
  CommandOptions o;
  o.argv = {"/usr/bin/python3", "-c",
            "import sys, time, torch\n"
            "b = int(sys.argv[1]); torch.manual_seed(0)\n"
            "m = torch.nn.Linear(64, 64); x = torch.randn(b, 64)\n"
            "t = time.perf_counter(); m(x).sum().backward()\n"
            "print(f'throughput: {b / (time.perf_counter() - t):.1f}')\n",
            "{batch_size}"};
  Config c;
  c.set("batch_size", int64_t{32});
  const TrialResult r = CommandRunner(o).run({c})[0];
  EXPECT_EQ(r.status, TrialStatus::kOk) << r.error << r.log_tail;
  EXPECT_GT(r.metrics.at("throughput"), 0);
}

TEST(CommandRunnerTest, SeveralRanksStartTheWayTorchrunDoes) {
  CommandOptions o;
  o.argv = {
      "sh", "-c",
      "echo \"rank $RANK of $WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE at $MASTER_ADDR:$MASTER_PORT\";"
      "echo \"throughput: 1$RANK\"; [ \"$RANK\" = 1 ] && [ \"$SLAPO_MODE\" = oom ] && "
      "{ echo 'CUDA out of memory' >&2; exit 1; };"
      "exit 0"};
  o.nproc = 3;
  CommandRunner runner(o);
  EXPECT_EQ(runner.world_size(), 3);
  const auto results = runner.run({config(R"({"mode": "ok"})"), config(R"({"mode": "oom"})")});
  EXPECT_EQ(results[0].status, TrialStatus::kOk) << results[0].error << results[0].log_tail;
  EXPECT_EQ(results[0].metrics.at("throughput"), 10);  // rank 0's metric
  EXPECT_EQ(results[1].status, TrialStatus::kOom);
  EXPECT_EQ(results[1].error, "rank 1: out of memory: CUDA out of memory");
}

TEST(CommandRunnerTest, APythonTorchDistributedScriptJoinsThroughOurVariables) {
  if (access("/usr/bin/python3", X_OK) != 0 ||
      std::system("/usr/bin/python3 -c 'import torch.distributed' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh installs it)";
  }
  CommandOptions o;
  o.argv = {
      "/usr/bin/python3", "-c",
      "import torch, torch.distributed as dist\n"
      "dist.init_process_group('gloo')\n"  // env:// from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
      "x = torch.ones(4) * (dist.get_rank() + 1); dist.all_reduce(x)\n"
      "print(f'throughput: {x[0].item()}')\n"};
  o.nproc = 2;
  o.timeout_s = 120;
  const TrialResult r = CommandRunner(o).run({Config()})[0];
  EXPECT_EQ(r.status, TrialStatus::kOk) << r.error << r.log_tail;
  EXPECT_EQ(r.metrics.at("throughput"), 3);  // 1 + 2: the ranks met
}

TEST(CommandRunnerTest, NamedRegexesStructuredLinesAndTheMetricsFileAllCount) {
  CommandOptions o;
  o.metrics = {{"speed", R"(speed=([0-9.]+))"}, {"mem", R"(mem ([0-9]+) bytes)"}};
  const TrialResult r = run_script(
      "echo speed=3; echo speed=12.5; echo 'mem 77 bytes';"
      "echo 'slapo-metrics: {\"step\": 1, \"samples_per_s\": 5}';"
      "echo 'slapo-metrics: {\"samples_per_s\": 40, \"loss\": 2.5}';"
      "echo '{\"peak_bytes\": 1e9}' >> \"$SLAPO_METRICS_FILE\";"
      "echo '{\"loss\": 2.25}' >> \"$SLAPO_METRICS_FILE\"",
      Config(), o);
  ASSERT_EQ(r.status, TrialStatus::kOk) << r.error << r.log_tail;
  EXPECT_EQ(r.metrics.at("speed"), 12.5);  // the last match
  EXPECT_EQ(r.metrics.at("mem"), 77);
  EXPECT_EQ(r.metrics.at("samples_per_s"), 40);  // the final report, not the intermediate one
  EXPECT_EQ(r.metrics.at("peak_bytes"), 1e9);
  EXPECT_EQ(r.metrics.at("loss"), 2.25);  // the file is read after the output: later wins
}

TEST(CommandRunnerTest, ABadReportFailsTheTrialAndSaysWhere) {
  const TrialResult nan =
      run_script("echo 'slapo-metrics: {\"samples_per_s\": null}'; echo throughput: 1");
  EXPECT_EQ(nan.status, TrialStatus::kInvalidMetric);
  EXPECT_EQ(nan.error, "standard output line 1: metric 'samples_per_s' is not finite");
  const TrialResult garbled = run_script("echo 'slapo-metrics: {samples: 3'");
  EXPECT_EQ(garbled.status, TrialStatus::kInvalidMetric);
  EXPECT_NE(garbled.error.find("standard output line 1: not a JSON object"), std::string::npos)
      << garbled.error;
  CommandOptions any_word;
  any_word.metrics = {{"throughput", R"(throughput: (\S+))"}};
  const TrialResult inf = run_script("echo throughput: inf", Config(), any_word);
  EXPECT_EQ(inf.status, TrialStatus::kInvalidMetric);
  EXPECT_EQ(inf.error, "metric 'throughput' is not finite (inf)");
}

TEST(CommandRunnerTest, AMetricsFileIsReadOnlyUpToItsCap) {
  const TrialResult r = run_script(
      "head -c 17000000 /dev/zero | tr '\\0' ' ' >> \"$SLAPO_METRICS_FILE\"; echo throughput: 1");
  EXPECT_EQ(r.status, TrialStatus::kInvalidMetric);
  EXPECT_NE(r.error.find("larger than 16 MiB; report metrics there, not logs"), std::string::npos)
      << r.error;
}

TEST(CommandRunnerTest, TheMetricsAreRankZerosAndAFailingRankExplainsTheTrial) {
  CommandOptions o;
  o.nproc = 2;
  // Rank 0 alone prints, as most scripts do.
  const TrialResult ok = run_script("[ \"$RANK\" = 0 ] && echo throughput: 9; exit 0", Config(), o);
  EXPECT_EQ(ok.status, TrialStatus::kOk) << ok.error;
  EXPECT_EQ(ok.metrics.at("throughput"), 9);
  const TrialResult failed = run_script(
      "[ \"$RANK\" = 1 ] && { echo 'ValueError: bad shape' >&2; exit 3; }; echo throughput: 9",
      Config(), o);
  EXPECT_EQ(failed.status, TrialStatus::kRuntimeError);
  EXPECT_EQ(failed.error, "rank 1: command exited with code 3: ValueError: bad shape");
  // --metric-rank all: every rank's, averaged; a rank without it fails the trial.
  o.metric_rank = kAllRanks;
  const TrialResult mean = run_script("echo throughput: 1$RANK", Config(), o);
  EXPECT_EQ(mean.metrics.at("throughput"), 10.5);
  const TrialResult missing =
      run_script("[ \"$RANK\" = 0 ] && echo throughput: 9; exit 0", Config(), o);
  EXPECT_EQ(missing.status, TrialStatus::kRuntimeError);
  EXPECT_NE(missing.error.find("rank 1: the command reported no metric"), std::string::npos)
      << missing.error;
  o.metric_rank = 2;
  o.argv = {"true"};
  EXPECT_THROW(CommandRunner{o}, Error);
}

TEST(CommandRunnerTest, OutOfMemoryAsUsersMeetIt) {
  for (const std::string message :
       {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't "
        "allocate memory: you tried to allocate 68719476736 bytes.",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "MemoryError", "terminate called after throwing an instance of 'std::bad_alloc'"}) {
    const TrialResult r = run_script("echo \"" + message + "\" >&2; exit 1");
    EXPECT_EQ(r.status, TrialStatus::kOom) << message;
    EXPECT_EQ(r.error, "out of memory: " + message);
  }
  // A script that succeeds and merely mentions memory is not out of memory.
  EXPECT_EQ(run_script("echo 'no MemoryError here'; echo throughput: 1").status, TrialStatus::kOk);
  // A kill this process did not send, with no OOM kill counted by the kernel, is a crash.
  const TrialResult killed = run_script("kill -KILL $$");
  EXPECT_EQ(killed.status, TrialStatus::kCrashed);
}

TEST(CommandRunnerTest, TheMemoryBudgetIsARealLimit) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  CommandOptions o;
  o.argv = {"/usr/bin/python3", "-c",
            "import sys; b = bytearray(int(sys.argv[1]) << 20); print('throughput:', len(b))",
            "{mib}"};
  o.memory_budget_bytes = 512ull << 20;
  CommandRunner runner(o);
  const auto results = runner.run({config(R"({"mib": 64})"), config(R"({"mib": 2048})")});
  EXPECT_EQ(results[0].status, TrialStatus::kOk) << results[0].error << results[0].log_tail;
  EXPECT_EQ(results[1].status, TrialStatus::kOom) << results[1].error << results[1].log_tail;
  EXPECT_EQ(results[1].error, "out of memory: MemoryError");
}

TEST(CommandRunnerTest, ARealPyTorchOutOfMemoryUnderTheBudget) {
  if (!have_torch())
    GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh installs it)";
  CommandOptions o;
  o.argv = {"/usr/bin/python3", "-c",
            "import sys, torch\n"
            "x = torch.ones(int(sys.argv[1]), 1 << 20)\n"  // MiB of floats × 4
            "print('throughput:', x.sum().item())\n",
            "{mib}"};
  o.memory_budget_bytes = 3ull << 30;  // LibTorch alone maps about 1 GiB of address space
  o.timeout_s = 120;
  CommandRunner runner(o);
  const auto results = runner.run({config(R"({"mib": 16})"), config(R"({"mib": 1024})")});
  EXPECT_EQ(results[0].status, TrialStatus::kOk) << results[0].error << results[0].log_tail;
  EXPECT_EQ(results[1].status, TrialStatus::kOom) << results[1].error << results[1].log_tail;
  EXPECT_NE(results[1].error.find("can't allocate memory"), std::string::npos) << results[1].error;
}

TEST(CommandRunnerTest, AConfigurationThatCannotStartFailsAloneSayingWhatIsTooLong) {
  CommandOptions o;
  o.argv = {"sh", "-c", "echo throughput: 1", "{name}"};
  CommandRunner runner(o);
  Config big, small;
  big.set("name", std::string(200 << 10, 'x'));
  small.set("name", std::string("x"));
  const auto results = runner.run({big, small});
  EXPECT_EQ(results[0].status, TrialStatus::kRuntimeError);
  EXPECT_NE(results[0].error.find("Argument list too long"), std::string::npos) << results[0].error;
  EXPECT_NE(results[0].error.find("the longest variable, SLAPO_NAME, 204812 bytes"),
            std::string::npos)
      << results[0].error;
  EXPECT_EQ(results[1].status, TrialStatus::kOk);  // the next one runs
  o.argv = {"/nonexistent/train"};
  const TrialResult missing = CommandRunner(o).run({small})[0];
  EXPECT_EQ(missing.status, TrialStatus::kRuntimeError);
  EXPECT_EQ(missing.error, "cannot run '/nonexistent/train': No such file or directory");
}

TEST(CommandRunnerTest, BooleansPlaceholdersAndTheReproducingLine) {
  CommandOptions o;
  o.argv = {"./train.py", "--ckpt={ckpt}", "--bs", "{batch_size}", "--name", "{name}", "{x}{x}"};
  o.cwd = "/work/my runs";
  const Config c = config(R"({"ckpt": true, "batch_size": 8, "name": "a b", "x": 1})");
  EXPECT_EQ(CommandRunner(o).argv_for(c)[1], "--ckpt=1");
  EXPECT_EQ(CommandRunner(o).argv_for(c)[6], "11");
  EXPECT_EQ(CommandRunner(o).env_for(c).at("SLAPO_CKPT"), "1");
  EXPECT_EQ(CommandRunner(o).command_line(c),
            "cd '/work/my runs' && SLAPO_BATCH_SIZE=8 SLAPO_CKPT=1 SLAPO_NAME='a b' SLAPO_X=1 "
            "./train.py --ckpt=1 --bs 8 --name 'a b' 11");
  o.bool_true = "true";
  o.bool_false = "false";
  EXPECT_EQ(CommandRunner(o).argv_for(config(R"({"ckpt": false})"))[1], "--ckpt=false");
  EXPECT_EQ(placeholders({"--lr={learning_rate}", "{a}{b}", "{a}", "{\"json\": 1}", "{1x}"}),
            (std::vector<std::string>{"learning_rate", "a", "b"}));
  o.nproc = 2;
  o.cwd = "";
  o.argv = {"python3", "train.py", "--bs", "{batch_size}"};
  EXPECT_EQ(CommandRunner(o).command_line(config(R"({"batch_size": 8})")),
            "SLAPO_BATCH_SIZE=8 torchrun --standalone --nproc-per-node 2 train.py --bs 8");
}

std::vector<IntermediateReport> curve(std::vector<double> values) {
  std::vector<IntermediateReport> reports;
  for (size_t i = 0; i < values.size(); ++i)
    reports.push_back({static_cast<int64_t>(i), {{"samples_per_s", values[i]}}});
  return reports;
}

TEST(EarlyStoppingTest, TheMedianRuleStopsOnlyWhatStaysBelowTheMedian) {
  EarlyStoppingOptions o;
  o.enabled = true;
  o.metric = "samples_per_s";
  MedianStopping stopping(o);
  EXPECT_FALSE(stopping.should_stop(curve({1, 1, 1})));  // nothing to compare with yet
  stopping.add_finished(curve({100, 110, 112, 112}));
  stopping.add_finished(curve({50, 60, 61, 61}));
  EXPECT_FALSE(stopping.should_stop(curve({1, 1, 1})));  // two finished: fewer than min_trials
  stopping.add_finished(curve({80, 90, 91, 91}));
  EXPECT_FALSE(stopping.should_stop(curve({70})));          // in its warm-up
  EXPECT_FALSE(stopping.should_stop(curve({70, 95})));      // one report below is not enough
  EXPECT_FALSE(stopping.should_stop(curve({95, 80, 95})));  // above the median at the last step
  const auto why = stopping.should_stop(curve({70, 80, 85}));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "stopped early at step 2: samples_per_s 85 is below the median 91 of 3 finished "
            "trials at that step (and was at step 1)");
  o.minimize = true;
  o.metric = "step_ms";
  MedianStopping times(o);
  for (double t : {10.0, 20.0, 30.0}) {
    std::vector<IntermediateReport> r = {{0, {{"step_ms", t}}}, {1, {{"step_ms", t}}}};
    times.add_finished(r);
  }
  std::vector<IntermediateReport> slow = {{0, {{"step_ms", 25}}}, {1, {{"step_ms", 26}}}};
  EXPECT_TRUE(times.should_stop(slow).has_value());
  o.enabled = false;
  EXPECT_FALSE(MedianStopping(o).should_stop(curve({0, 0, 0})).has_value());
}

TEST(EarlyStoppingTest, ASlowTrialIsStoppedWhileItRuns) {
  CommandOptions o;
  o.metrics = {};
  o.early_stopping.enabled = true;
  o.early_stopping.metric = "samples_per_s";
  o.timeout_s = 60;
  // Reports its rate every 0.1 s for 2 s (via the metrics file), then its final rate.
  o.argv = {"sh", "-c",
            "for i in $(seq 0 19); do echo \"{\\\"step\\\": $i, \\\"samples_per_s\\\": $RATE}\" "
            ">> \"$SLAPO_METRICS_FILE\"; sleep 0.1; done;"
            "echo \"slapo-metrics: {\\\"samples_per_s\\\": $RATE}\""};
  CommandRunner runner(o);
  std::vector<TrialResult> results;
  for (const char* rate : {"100", "90", "110", "30"}) {
    setenv("RATE", rate, 1);
    results.push_back(runner.run({Config()})[0]);
  }
  unsetenv("RATE");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(results[i].status, TrialStatus::kOk) << results[i].error;
  EXPECT_EQ(results[3].status, TrialStatus::kPruned);
  EXPECT_NE(results[3].error.find("stopped early at step"), std::string::npos) << results[3].error;
  EXPECT_EQ(results[3].metrics.at("samples_per_s"), 30);  // where it was when stopped
  EXPECT_LT(results[3].metrics.at("wall_s"), results[0].metrics.at("wall_s") * 0.6);
}

TEST(CommandRunnerTest, AnInterruptEndsEveryRankAndIsRecordedAsSuch) {
  clear_interrupt();
  CommandOptions o;
  o.nproc = 2;
  std::thread interrupter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    request_interrupt();
  });
  const TrialResult r = run_script("sleep 30 & sleep 30; echo throughput: 1", Config(), o);
  interrupter.join();
  clear_interrupt();
  EXPECT_EQ(r.status, TrialStatus::kInterrupted) << r.error;
  EXPECT_LT(r.metrics.at("wall_s"), 5.0);
}

}  // namespace
}  // namespace slapo::runners
