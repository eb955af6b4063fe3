// Schedule benchmarks (docs/benchmarks.md). Run: ./build/benchmark/schedule_bench
//
// BM_GptMiniStep/<ckpt %>/<fused_lm_loss>/<fused_adamw>/<fuse>: one AdamW training step of
//   gpt-mini (6 layers, hidden 256, 8 heads, vocab 8192), batch 16, seq 128, dropout on, 2
//   threads, with the first round(r · 6) blocks checkpointed, the LM head fused with the loss (1)
//   or not, the fused AdamW (1) or LibTorch's, the eager fusions fuse_bias_gelu and
//   fuse_layer_norm (1) or not. Counters: peak_MiB — the largest live tensor memory during the
//   measured steps (parameters, AdamW state, activations, gradients), exact, from the tracking
//   allocator; step_MiB — that peak above the memory live before the step (activations and
//   gradients).
// BM_LongSequenceStep/<attn>/<batch>: the same step at sequence 1024 (gpt-mini's positions
//   extended), attn 0 = naive, 1 = memory_efficient, fused LM loss on in both (so that the
//   attention's memory is what differs); peak_MiB and step_MiB as above.
// BM_ScheduleAndBuild48: create_schedule + template (ckpt_ratio 0.5, fused QKV attention) + build
//   on a 48-layer GPT; model construction is not timed.
// benchmark/python/gpt_eager.py is the same gpt-mini step in PyTorch eager, for the comparison
// (benchmark/compare_eager.sh runs both, one after the other).

#include <benchmark/benchmark.h>

#include <torch/torch.h>

#include "models/templates.h"
#include "models/training_batch.h"
#include "models/zoo.h"
#include "runners/tracking_allocator.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/kernels/fused_lm_loss.h"
#include "schedule/language/build.h"

namespace {

using namespace slapo;

// AdamW (lr 1e-4) over `params`: the fused one (schedule/kernels/fused_adamw.h) or LibTorch's.
std::unique_ptr<torch::optim::Optimizer> adamw(const std::vector<torch::Tensor>& params,
                                               bool fused) {
  if (fused)
    return std::make_unique<schedule::FusedAdamW>(params, torch::optim::AdamWOptions(1e-4));
  return std::make_unique<torch::optim::AdamW>(params, torch::optim::AdamWOptions(1e-4));
}

void BM_GptMiniStep(benchmark::State& state) {
  torch::set_num_threads(2);
  runners::TrackingAllocator& tracker = runners::TrackingAllocator::instance();
  const models::ModelSpec spec = models::model_preset("gpt-mini");
  auto model = models::build_model(spec, 0);
  auto sch = schedule::create_schedule(model);
  Config config;
  config.set("ckpt_ratio", static_cast<double>(state.range(0)) / 100.0);
  config.set("fused_lm_loss", state.range(1) != 0);
  config.set("fuse_bias_gelu", state.range(3) != 0);
  config.set("fuse_layer_norm", state.range(3) != 0);
  models::apply_template(*sch, spec, "gpt", config);
  const auto params = slapo::schedule::unique_parameters(*model);
  const std::unique_ptr<torch::optim::Optimizer> optimizer = adamw(params, state.range(2) != 0);
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(spec.vocab, {16, 128}, torch::kLong);
  const torch::Tensor targets = torch::randint(spec.vocab, {16, 128}, torch::kLong);
  auto step = [&] {
    optimizer->zero_grad();
    torch::Tensor loss = models::model_loss(*model, tokens, targets, models::language_model_loss);
    loss.backward();
    optimizer->step();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: AdamW state, allocator, BLAS buffers
  const size_t baseline = tracker.live_bytes();
  tracker.reset_peak();
  for (auto _ : state) step();
  state.counters["peak_MiB"] = static_cast<double>(tracker.peak_bytes()) / (1 << 20);
  state.counters["step_MiB"] = static_cast<double>(tracker.peak_bytes() - baseline) / (1 << 20);
  state.counters["ckpt_blocks"] = static_cast<double>(models::checkpointed_blocks(spec, config));
  // The step's matrix products (forward, and backward's two per forward product), to set against
  // BM_Sgemm's rate: what the step would take if it were matrix products alone.
  state.counters["GFLOP"] = 3 * spec.forward_flops(128) * 16 / 1e9;
}
BENCHMARK(BM_GptMiniStep)
    ->Args({0, 0, 0, 0})
    ->Args({50, 0, 0, 0})
    ->Args({100, 0, 0, 0})
    ->Args({0, 1, 0, 0})
    ->Args({0, 0, 1, 0})
    ->Args({0, 0, 0, 1})
    ->Args({0, 1, 1, 0})
    ->Args({0, 1, 1, 1})
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LongSequenceStep(benchmark::State& state) {
  torch::set_num_threads(2);
  runners::TrackingAllocator& tracker = runners::TrackingAllocator::instance();
  const int64_t seq = 1024, batch = state.range(1);
  models::ModelSpec spec = models::model_preset("gpt-mini");
  spec.max_seq = seq;
  auto model = models::build_model(spec, 0);
  auto sch = schedule::create_schedule(model);
  Config config;
  config.set("attn", std::string(state.range(0) ? "memory_efficient" : "naive"));
  config.set("fused_lm_loss", true);
  models::apply_template(*sch, spec, "gpt", config);
  schedule::FusedAdamW optimizer(slapo::schedule::unique_parameters(*model),
                                 torch::optim::AdamWOptions(1e-4));
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(spec.vocab, {batch, seq}, torch::kLong);
  const torch::Tensor targets = torch::randint(spec.vocab, {batch, seq}, torch::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    models::model_loss(*model, tokens, targets, models::language_model_loss).backward();
    optimizer.step();
  };
  step();  // warm-up: AdamW state, allocator, BLAS buffers
  const size_t baseline = tracker.live_bytes();
  tracker.reset_peak();
  for (auto _ : state) step();
  state.counters["peak_MiB"] = static_cast<double>(tracker.peak_bytes()) / (1 << 20);
  state.counters["step_MiB"] = static_cast<double>(tracker.peak_bytes() - baseline) / (1 << 20);
  state.SetLabel(state.range(0) ? "memory_efficient" : "naive");
}
BENCHMARK(BM_LongSequenceStep)
    ->ArgsProduct({{0, 1}, {2, 4, 8}})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// BM_BertMiniStep/<kernels>: one AdamW training step of bert-mini (4 post-LN layers, hidden 256,
//   4 heads, vocabulary 8192, masked-LM loss over 15% of the positions), batch 16, seq 128, 2
//   threads; kernels 1 = fused_lm_loss (the masked positions only through the head and decoder),
//   fused_adamw and the eager fuse_bias_gelu + fuse_layer_norm. benchmark/python/bert_eager.py is
//   the same step in PyTorch eager.
void BM_BertMiniStep(benchmark::State& state) {
  torch::set_num_threads(2);
  runners::TrackingAllocator& tracker = runners::TrackingAllocator::instance();
  const models::ModelSpec spec = models::model_preset("bert-mini");
  auto model = models::build_model(spec, 0);
  auto sch = schedule::create_schedule(model);
  const bool kernels = state.range(0) != 0;
  Config config;
  for (const char* knob : {"fused_lm_loss", "fuse_bias_gelu", "fuse_layer_norm"})
    config.set(knob, kernels);
  models::apply_template(*sch, spec, "bert", config);
  const auto params = slapo::schedule::unique_parameters(*model);
  const std::unique_ptr<torch::optim::Optimizer> optimizer = adamw(params, kernels);
  torch::manual_seed(1);
  const models::TrainingBatch batch =
      models::training_batch(spec, torch::randint(spec.vocab, {16, 129}, torch::kLong));
  const models::LossFn loss = models::training_loss(spec);
  auto step = [&] {
    optimizer->zero_grad();
    models::model_loss(*model, batch.inputs, batch.targets, loss).backward();
    optimizer->step();
  };
  for (int i = 0; i < 3; ++i) step();
  tracker.reset_peak();
  for (auto _ : state) step();
  state.counters["peak_MiB"] = static_cast<double>(tracker.peak_bytes()) / (1 << 20);
  // The step's matrix products (x3 for backward), to set against BM_Sgemm's rate: the blocks for
  // every token; the head (its dense transform and the decoder) for every token unscheduled, for
  // the masked positions only with the fused loss.
  const double tokens = static_cast<double>(batch.targets.numel());
  const double head_tokens =
      kernels ? batch.targets.ne(models::kIgnoredTarget).sum().item<double>() : tokens;
  const double head_per_token =
      2.0 * static_cast<double>(spec.hidden) * static_cast<double>(spec.hidden + spec.vocab);
  state.counters["GFLOP"] =
      3 *
      (static_cast<double>(spec.layers) * spec.block_forward_flops(128) * tokens / 128 +
       head_per_token * head_tokens) /
      1e9;
  state.SetLabel(kernels ? "kernel knobs" : "unscheduled");
}
BENCHMARK(BM_BertMiniStep)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// BM_Sgemm/<m>/<k>/<n>: one float32 [m, k] × [k, n] product on 2 threads, the rate BLAS achieves
//   on this machine (counter GFLOPs): gpt-mini's MLP (2048 tokens × 256 → 1024) and LM head
//   (2048 × 256 → 8192) shapes.
void BM_Sgemm(benchmark::State& state) {
  torch::set_num_threads(2);
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  torch::manual_seed(0);
  const torch::Tensor a = torch::randn({m, k}), b = torch::randn({k, n});
  torch::Tensor c = torch::empty({m, n});
  for (int i = 0; i < 3; ++i) torch::mm_out(c, a, b);
  for (auto _ : state) torch::mm_out(c, a, b);
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * m * k * n / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sgemm)
    ->Args({2048, 256, 1024})
    ->Args({2048, 256, 8192})
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->UseRealTime();

// BM_LmHeadLoss/<impl>/<shape>/<threads>: an LM head (tied weight) and its cross-entropy,
//   forward + backward, impl 0 = matmul + cross_entropy, 1 = the fused linear_cross_entropy;
//   shape 0 = gpt-mini's (2048 tokens = batch 16 × 128, hidden 256, vocabulary 8192), 1 = gpt2's
//   (1024 tokens = one sequence, hidden 768, vocabulary 50257). head_MiB is the tracked peak above
//   what was live before (hidden states, weight and their gradients included in both): the
//   logits' memory.
void BM_LmHeadLoss(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(2)));
  runners::TrackingAllocator& tracker = runners::TrackingAllocator::instance();
  const bool gpt2 = state.range(1) == 1;
  const int64_t tokens = gpt2 ? 1024 : 2048, hidden = gpt2 ? 768 : 256, vocab = gpt2 ? 50257 : 8192;
  torch::manual_seed(0);
  torch::Tensor h = torch::randn({tokens, hidden}).requires_grad_(true);
  torch::Tensor w = (torch::randn({vocab, hidden}) * 0.02).requires_grad_(true);
  const torch::Tensor targets = torch::randint(vocab, {tokens}, torch::kLong);
  auto once = [&] {
    h.mutable_grad() = torch::Tensor();
    w.mutable_grad() = torch::Tensor();
    torch::Tensor loss = state.range(0)
                             ? schedule::linear_cross_entropy(h, w, torch::Tensor(), targets)
                             : models::language_model_loss(torch::matmul(h, w.t()), targets);
    loss.backward();
  };
  once();
  h.mutable_grad() = torch::Tensor();
  w.mutable_grad() = torch::Tensor();
  const size_t before = tracker.live_bytes();
  tracker.reset_peak();
  for (auto _ : state) once();
  state.counters["head_MiB"] = static_cast<double>(tracker.peak_bytes() - before) / (1 << 20);
  state.SetLabel(state.range(0) ? "fused linear_cross_entropy" : "matmul + cross_entropy");
}
BENCHMARK(BM_LmHeadLoss)
    ->ArgsProduct({{0, 1}, {0}, {1, 2}})
    ->Iterations(10)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// gpt2's head is 10× the products of gpt-mini's: fewer iterations.
BENCHMARK(BM_LmHeadLoss)
    ->ArgsProduct({{0, 1}, {1}, {1, 2}})
    ->Iterations(2)
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
