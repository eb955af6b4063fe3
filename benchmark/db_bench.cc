// Database benchmarks (docs/benchmarks.md). Run: ./build/benchmark/db_bench
//
// BM_AddTrial: one committed trial (its own transaction, WAL, synchronous=FULL default) into a
//   database file that already holds 10^5 trials.
// BM_Best/<k>: the top-k query on the objective over 10^5 trials.
// BM_FindTrial: "already measured?" by configuration hash over 10^5 trials.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>

#include "db/database.h"

namespace {

using namespace slapo;

struct Fixture {
  std::string path;
  std::unique_ptr<db::Database> database;
  int64_t task = 0;
  int64_t next = 0;
};

db::TrialRecord make_trial(int64_t task, int64_t i) {
  db::TrialRecord t;
  t.task_id = task;
  t.config.set("batch_size", i);
  t.config.set("ckpt_ratio", 0.5);
  t.config.set("attn", std::string("fused_qkv"));
  t.result.metrics = {{"samples_per_s", static_cast<double>(i % 977)},
                      {"step_ms_median", 12.5},
                      {"peak_bytes", 1e8}};
  t.objective = static_cast<double>(i % 977);
  t.strategy = "bench";
  return t;
}

Fixture& fixture() {
  static Fixture* f = [] {
    auto* f = new Fixture();
    f->path = "/tmp/slapo_db_bench_" + std::to_string(getpid()) + ".db";
    std::remove(f->path.c_str());
    f->database = db::Database::open(f->path);
    db::TaskKey key;
    key.workload_json = "{}";
    key.space_hash = "bench";
    key.fingerprint_json = "{}";
    f->task = f->database->find_or_create_task(key, {"samples_per_s", false}).id;
    for (; f->next < 100000; ++f->next) f->database->add_trial(make_trial(f->task, f->next));
    return f;
  }();
  return *f;
}

void BM_AddTrial(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state) f.database->add_trial(make_trial(f.task, f.next++));
}
BENCHMARK(BM_AddTrial)->Unit(benchmark::kMicrosecond);

void BM_Best(benchmark::State& state) {
  Fixture& f = fixture();
  for (auto _ : state)
    benchmark::DoNotOptimize(f.database->best(f.task, static_cast<size_t>(state.range(0))));
}
BENCHMARK(BM_Best)->Arg(1)->Arg(10)->Unit(benchmark::kMicrosecond);

void BM_FindTrial(benchmark::State& state) {
  Fixture& f = fixture();
  Config c = make_trial(f.task, 54321).config;
  for (auto _ : state) benchmark::DoNotOptimize(f.database->find_trial(f.task, c));
}
BENCHMARK(BM_FindTrial)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::remove(fixture().path.c_str());
  std::remove((fixture().path + "-wal").c_str());
  std::remove((fixture().path + "-shm").c_str());
  return 0;
}
