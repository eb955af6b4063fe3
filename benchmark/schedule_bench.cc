// Schedule benchmarks (docs/benchmarks.md). Run: ./build/benchmark/schedule_bench
//
// BM_GptMiniStep/<ckpt %>: one AdamW training step of gpt-mini (6 layers, hidden 256, 8 heads,
//   vocab 8192), batch 16, seq 128, dropout on, 2 threads, with the first round(r · 6) blocks
//   checkpointed. Counters: peak_MiB — the largest live tensor memory during the measured steps
//   (parameters, AdamW state, activations, gradients), exact, from the tracking allocator;
//   step_MiB — that peak above the memory live before the step (activations and gradients).
// BM_ScheduleAndBuild48: create_schedule + template (ckpt_ratio 0.5, fused QKV attention) + build
//   on a 48-layer GPT; model construction is not timed.
// benchmark/python/gpt_eager.py is the same gpt-mini step in PyTorch eager, for the comparison
// (benchmark/compare_eager.sh runs both, one after the other).

#include <benchmark/benchmark.h>

#include <torch/torch.h>

#include "models/templates.h"
#include "models/zoo.h"
#include "runners/tracking_allocator.h"
#include "schedule/language/build.h"

namespace {

using namespace slapo;

void BM_GptMiniStep(benchmark::State& state) {
  torch::set_num_threads(2);
  runners::TrackingAllocator& tracker = runners::TrackingAllocator::instance();
  const models::ModelSpec spec = models::model_preset("gpt-mini");
  auto model = models::build_model(spec, 0);
  auto sch = schedule::create_schedule(model);
  Config config;
  config.set("ckpt_ratio", static_cast<double>(state.range(0)) / 100.0);
  models::apply_template(*sch, spec, "gpt", config);
  torch::optim::AdamW optimizer(slapo::schedule::unique_parameters(*model),
                                torch::optim::AdamWOptions(1e-4));
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(spec.vocab, {16, 128}, torch::kLong);
  const torch::Tensor targets = torch::randint(spec.vocab, {16, 128}, torch::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    torch::Tensor loss =
        models::language_model_loss(models::model_forward(*model, tokens), targets);
    loss.backward();
    optimizer.step();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: AdamW state, allocator, BLAS buffers
  const size_t baseline = tracker.live_bytes();
  tracker.reset_peak();
  for (auto _ : state) step();
  state.counters["peak_MiB"] = static_cast<double>(tracker.peak_bytes()) / (1 << 20);
  state.counters["step_MiB"] = static_cast<double>(tracker.peak_bytes() - baseline) / (1 << 20);
  state.counters["ckpt_blocks"] = static_cast<double>(models::checkpointed_blocks(spec, config));
}
BENCHMARK(BM_GptMiniStep)
    ->Arg(0)
    ->Arg(50)
    ->Arg(100)
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ScheduleAndBuild48(benchmark::State& state) {
  models::ModelSpec spec = models::model_preset("gpt-tiny");
  spec.layers = 48;
  spec.hidden = 64;
  spec.ffn = 256;
  Config config;
  config.set("ckpt_ratio", 0.5);
  config.set("attn", std::string("fused_qkv"));
  size_t primitives = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto model = models::build_model(spec, 0);
    state.ResumeTiming();
    auto sch = schedule::create_schedule(model);
    models::apply_template(*sch, spec, "gpt", config);
    const schedule::BuildResult built = schedule::build(*sch);
    primitives = built.plan.applied.size();
    benchmark::DoNotOptimize(built.module);
  }
  state.counters["primitives"] = static_cast<double>(primitives);
}
BENCHMARK(BM_ScheduleAndBuild48)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
