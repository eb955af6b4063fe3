// Runner benchmarks (docs/benchmarks.md). Run: ./build/benchmark/runner_bench
//
// BM_Overhead/<runner>: one gpt-tiny trial (1 warm-up + 1 timed step); overhead_ms is the wall
//   time of run() minus what the trial itself reports (build_ms + train_ms): process start or
//   fork, LibTorch loading, JSON, allocator set-up. 0: in-process; 1: subprocess, a new process per
//   trial; 2: subprocess through the fork server (its start is paid once, before the first
//   measured iteration).
// BM_GptMiniNoise: 5 repeats of the same gpt-mini trial (batch 8, seq 128, 2 warm-up + 5 timed
//   steps, 2 threads) in-process; cv_percent is the coefficient of variation of samples/s.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <memory>

#include "runners/inprocess_runner.h"
#include "runners/subprocess_runner.h"

namespace {

using namespace slapo;

std::string slapo_tune() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  std::string self(path, n > 0 ? static_cast<size_t>(n) : 0);
  return self.substr(0, self.rfind("/benchmark/")) + "/slapo-tune";
}

const char* kTiny =
    R"({"model": "gpt-tiny", "batch_size": 8, "warmup": 1, "steps": 1, "threads": 1})";

void BM_Overhead(benchmark::State& state) {
  std::unique_ptr<runners::Runner> runner;
  if (state.range(0) == 0) {
    runner =
        std::make_unique<runners::InProcessRunner>(runners::Workload::from_json(kTiny, "bench"));
  } else {
    runners::SubprocessOptions o;
    o.worker = {slapo_tune(), "worker"};
    o.workload_json = kTiny;
    o.fork_server = state.range(0) == 2;
    runner = std::make_unique<runners::SubprocessRunner>(o);
    if (o.fork_server) runner->run({Config()});  // starts the server
  }
  double overhead_ms = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const TrialResult r = runner->run({Config()})[0];
    const double wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (r.status != TrialStatus::kOk) {
      state.SkipWithError(r.error.c_str());
      return;
    }
    overhead_ms += wall_ms - r.metrics.at("build_ms") - r.metrics.at("train_ms");
  }
  state.SetLabel(state.range(0) == 2 ? "subprocess (fork server)" : runner->kind());
  state.counters["overhead_ms"] = overhead_ms / static_cast<double>(state.iterations());
}
BENCHMARK(BM_Overhead)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_GptMiniNoise(benchmark::State& state) {
  runners::InProcessRunner runner(runners::Workload::from_json(
      R"({"model": "gpt-mini", "batch_size": 8, "seq_len": 128, "warmup": 2, "steps": 5, "threads": 2})",
      "bench"));
  std::vector<double> throughput;
  for (auto _ : state) {
    for (int i = 0; i < 5; ++i)
      throughput.push_back(runner.run({Config()})[0].metrics.at("samples_per_s"));
  }
  double mean = 0, var = 0;
  for (double t : throughput) mean += t / static_cast<double>(throughput.size());
  for (double t : throughput)
    var += (t - mean) * (t - mean) / static_cast<double>(throughput.size() - 1);
  state.counters["samples_per_s_mean"] = mean;
  state.counters["cv_percent"] = 100 * std::sqrt(var) / mean;
}
BENCHMARK(BM_GptMiniNoise)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
