// Tuner overhead per trial (docs/benchmarks.md). Run: ./build/benchmark/tuner_bench
//
// 200 trials with a fake runner that returns at once, on a 64-device training space, recorded in
// an in-memory database (BM_TunerOverhead/<strategy>/0) or a database file (…/1). The time per
// trial (the Time column divided by `trials`) is everything the tuner does: proposing, pruning,
// recording, observing.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>

#include "space/compiled_space.h"
#include "space/space_file.h"
#include "tuner/tuner.h"

namespace {

using namespace slapo;

const char* kSpace = R"(
[parameters]
world_size = 64
[knobs]
tp          = { pow2 = [1, 64], mem = "down" }
pp          = { pow2 = [1, 64], mem = "down" }
dp          = { pow2 = [1, 64] }
micro_batch = { range = [1, 32], mem = "up" }
ckpt_layers = { range = [0, 48], mem = "down" }
attn        = { choice = ["naive", "fused"] }
[constraints]
devices = "tp * pp * dp == world_size"
)";

class InstantRunner : public runners::Runner {
 public:
  std::vector<TrialResult> run(const std::vector<Config>& candidates) override {
    std::vector<TrialResult> out;
    for (const Config& c : candidates) {
      const double mb = as_number(c.at("micro_batch")), ck = as_number(c.at("ckpt_layers"));
      if (mb * (48 - ck) / as_number(c.at("tp")) > 400) {
        out.push_back(failed_trial(TrialStatus::kOom, "out of memory"));
        continue;
      }
      TrialResult r;
      r.metrics["samples_per_s"] = mb * as_number(c.at("dp")) / (1 + 0.01 * ck);
      out.push_back(r);
    }
    return out;
  }
  std::string kind() const override { return "instant"; }
};

void BM_TunerOverhead(benchmark::State& state, const std::string& strategy) {
  const space::CompiledSpace space =
      space::CompiledSpace::compile(space::parse_space(kSpace, "bench.toml"));
  InstantRunner runner;
  tuner::TunerOptions options;
  options.strategy = strategy;
  options.trials = 200;
  size_t trials = 0;
  for (auto _ : state) {
    const std::string path = "/tmp/slapo_tuner_bench_" + std::to_string(getpid()) + ".db";
    std::remove(path.c_str());
    auto database = state.range(0) == 0 ? db::Database::in_memory() : db::Database::open(path);
    db::TaskKey key;
    key.workload_json = "{}";
    key.space_hash = "bench";
    key.fingerprint_json = "{}";
    const tuner::TuneSummary s = tuner::tune(space, runner, *database, key, options);
    trials = s.measured + s.pruned;
    database.reset();
    std::remove(path.c_str());
    std::remove((path + "-wal").c_str());
    std::remove((path + "-shm").c_str());
  }
  state.counters["trials"] = static_cast<double>(trials);
}
BENCHMARK_CAPTURE(BM_TunerOverhead, random, std::string("random"))
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TunerOverhead, coordinate, std::string("coordinate"))
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TunerOverhead, bayes, std::string("bayes"))
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TunerOverhead, auto, std::string("auto")) -> Arg(0) -> Arg(1)
    -> Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
