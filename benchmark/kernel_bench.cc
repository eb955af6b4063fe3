// The project's fused CPU kernels against the ATen sequences they replace, forward + backward,
// side by side in one run (docs/benchmarks.md). Run: ./build/benchmark/kernel_bench
// (SLAPO_SIMD=avx2 or =baseline caps the kernels' instruction set.)
//
// Every benchmark is <name>/<impl>/<rows>/<cols>/<threads>, impl 0 = the ATen sequence, 1 = ours:
//   BM_BiasGelu        gelu(x + b)                 vs slapo::bias_gelu
//   BM_BiasDropoutAdd  r + keyed_dropout(x + b)    vs slapo::bias_dropout_add (p = 0.1)
//   BM_Dropout         ATen's dropout (bernoulli)  vs slapo::keyed_dropout (hash mask, p = 0.1)
//   BM_LayerNorm       at::layer_norm              vs slapo::layer_norm
//   BM_AddLayerNorm    s = x + r; layer_norm(s) + s vs slapo::add_layer_norm (both outputs used)
// Shapes: gpt-mini (batch 8 × 128 tokens: hidden 256, ffn 1024) and gpt2 (1 × 1024 tokens:
// hidden 768, ffn 3072).
//   BM_AdamW           torch::optim::AdamW::step   vs slapo::schedule::FusedAdamW::step
//                      (<impl>/<model>/<threads>: the parameters of gpt-mini (0), gpt2 (1) or
//                      llama-mini (2));
//                      impl 2: torch::optim::AdamW on one flat tensor of as many elements (how the
//                      cost model's profile timed the optimizer until it timed it in the model's
//                      steps: docs/cost-model.md)
//   BM_Attention       causal softmax(q·kᵀ/√d) with keyed dropout (p = 0.1) · v, ATen's matmul,
//                      masked_fill, softmax, dropout, matmul vs slapo::memory_efficient_attention
//                      (<impl>/<shape>/<threads>: gpt-mini, 8 × 8 heads × 128 (0); gpt2, 1 × 12
//                      heads × 1024 (1); gpt-mini's heads at 4 × 1024 (2))

#include <functional>

#include <benchmark/benchmark.h>

#include <torch/torch.h>

#include "models/zoo.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/kernels/fused_kernels.h"
#include "schedule/kernels/memory_efficient_attention.h"
#include "schedule/language/build.h"
#include "schedule/runtime/keyed_dropout.h"

namespace {

using slapo::schedule::DropoutScope;

// What a kernel takes besides x [rows, cols]: a vector of cols (a bias or a weight) or another
// [rows, cols] tensor (a residual).
enum Arg { kVector, kMatrix };

// Times forward + backward of `f` (gradient y·dy) on leaves x and `extra`.
void run(benchmark::State& state, const std::vector<Arg>& extra,
         const std::function<torch::Tensor(std::vector<torch::Tensor>&)>& f, const char* label) {
  torch::set_num_threads(static_cast<int>(state.range(3)));
  const int64_t rows = state.range(1), cols = state.range(2);
  torch::manual_seed(0);
  std::vector<torch::Tensor> in = {torch::randn({rows, cols}).requires_grad_(true)};
  for (Arg a : extra) {
    in.push_back(
        (a == kVector ? torch::randn({cols}) : torch::randn({rows, cols})).requires_grad_(true));
  }
  const torch::Tensor dy = torch::randn({rows, cols});
  uint64_t step = 0;
  auto once = [&] {
    DropoutScope scope(step++, 0);
    torch::Tensor y = f(in);
    y.backward(dy);
    for (torch::Tensor& t : in) t.mutable_grad().reset();
  };
  for (int i = 0; i < 3; ++i) once();
  for (auto _ : state) once();
  state.SetLabel(label);
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void BM_BiasGelu(benchmark::State& state) {
  if (state.range(0) == 0) {
    run(
        state, {kVector}, [](auto& in) { return torch::gelu(in[0] + in[1]); }, "ATen add + gelu");
  } else {
    run(
        state, {kVector}, [](auto& in) { return slapo::schedule::bias_gelu(in[0], in[1]); },
        "slapo::bias_gelu");
  }
}

void BM_BiasDropoutAdd(benchmark::State& state) {
  slapo::schedule::KeyedDropout dropout(0.1, 7);
  if (state.range(0) == 0) {
    run(
        state, {kVector, kMatrix},
        [&](auto& in) { return in[2] + dropout->forward(in[0] + in[1]); },
        "add + keyed_dropout + add");
  } else {
    run(
        state, {kVector, kMatrix},
        [](auto& in) { return slapo::schedule::bias_dropout_add(in[0], in[1], in[2], 0.1, 7); },
        "slapo::bias_dropout_add");
  }
}

void BM_Dropout(benchmark::State& state) {
  slapo::schedule::KeyedDropout dropout(0.1, 7);
  if (state.range(0) == 0) {
    run(
        state, {}, [](auto& in) { return torch::dropout(in[0], 0.1, /*train=*/true); },
        "ATen dropout");
  } else {
    run(
        state, {}, [&](auto& in) { return dropout->forward(in[0]); }, "slapo::keyed_dropout");
  }
}

void BM_LayerNorm(benchmark::State& state) {
  if (state.range(0) == 0) {
    run(
        state, {kVector, kVector},
        [](auto& in) { return torch::layer_norm(in[0], {in[0].size(1)}, in[1], in[2]); },
        "ATen layer_norm");
  } else {
    run(
        state, {kVector, kVector},
        [](auto& in) { return slapo::schedule::layer_norm(in[0], in[1], in[2], 1e-5); },
        "slapo::layer_norm");
  }
}

// A pre-LN block's residual add and the norm after it, both outputs used (their sum is what is
// backwarded, in both: one more add each).
void BM_AddLayerNorm(benchmark::State& state) {
  if (state.range(0) == 0) {
    run(
        state, {kMatrix, kVector, kVector},
        [](auto& in) {
          const torch::Tensor sum = in[0] + in[1];
          return torch::layer_norm(sum, {sum.size(1)}, in[2], in[3]) + sum;
        },
        "ATen add + layer_norm");
  } else {
    run(
        state, {kMatrix, kVector, kVector},
        [](auto& in) {
          auto [sum, normed] = slapo::schedule::add_layer_norm(in[0], in[1], in[2], in[3], 1e-5);
          return normed + sum;
        },
        "slapo::add_layer_norm");
  }
}

#define SLAPO_KERNEL_BENCH(fn, mini_cols, gpt2_cols)       \
  BENCHMARK(fn)                                            \
      ->ArgsProduct({{0, 1}, {1024}, {mini_cols}, {1, 2}}) \
      ->ArgsProduct({{0, 1}, {1024}, {gpt2_cols}, {1, 2}}) \
      ->Unit(benchmark::kMillisecond)                      \
      ->UseRealTime()                                      \
      ->Repetitions(5)                                     \
      ->ReportAggregatesOnly(true)

SLAPO_KERNEL_BENCH(BM_BiasGelu, 1024, 3072);
SLAPO_KERNEL_BENCH(BM_BiasDropoutAdd, 256, 768);
SLAPO_KERNEL_BENCH(BM_Dropout, 256, 768);
SLAPO_KERNEL_BENCH(BM_LayerNorm, 256, 768);
SLAPO_KERNEL_BENCH(BM_AddLayerNorm, 256, 768);

// One optimizer step over every parameter of a model (gradients set once; the step only reads
// them), AdamW's defaults but the learning rate.
void BM_AdamW(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(2)));
  const char* const models[] = {"gpt-mini", "gpt2", "llama-mini"};
  auto model = slapo::models::build_model(slapo::models::model_preset(models[state.range(1)]));
  auto params = slapo::schedule::unique_parameters(*model);
  int64_t elements = 0;
  for (const auto& p : params) elements += p.numel();
  if (state.range(0) == 2) params = {torch::zeros({elements}).requires_grad_()};
  for (const auto& p : params) p.mutable_grad() = torch::randn_like(p) * 1e-3;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  const auto options = torch::optim::AdamWOptions(1e-4);
  if (state.range(0) == 1)
    optimizer = std::make_unique<slapo::schedule::FusedAdamW>(params, options);
  else
    optimizer = std::make_unique<torch::optim::AdamW>(params, options);
  optimizer->step();  // the moments are allocated at the first step
  for (auto _ : state) optimizer->step();
  const char* const labels[] = {"torch::optim::AdamW", "slapo FusedAdamW",
                                "torch::optim::AdamW, one flat tensor"};
  state.SetLabel(labels[state.range(0)]);
  state.SetItemsProcessed(state.iterations() * elements);
}
void BM_Attention(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(2)));
  struct Shape {
    int64_t batch, heads, seq, dim;
  };
  const Shape shapes[] = {{8, 8, 128, 32}, {1, 12, 1024, 64}, {4, 8, 1024, 32}};
  const Shape sh = shapes[state.range(1)];
  torch::manual_seed(0);
  std::vector<torch::Tensor> qkv;
  for (int i = 0; i < 3; ++i)
    qkv.push_back(torch::randn({sh.batch, sh.heads, sh.seq, sh.dim}).requires_grad_(true));
  const torch::Tensor dy = torch::randn({sh.batch, sh.heads, sh.seq, sh.dim});
  const double scale = 1.0 / std::sqrt(static_cast<double>(sh.dim));
  slapo::schedule::KeyedDropout dropout(0.1, 7);
  const torch::Tensor hide = torch::ones({sh.seq, sh.seq}, torch::kBool).triu(1);
  uint64_t step = 0;
  auto once = [&] {
    DropoutScope scope(step++, 0);
    torch::Tensor y;
    if (state.range(0) == 0) {
      torch::Tensor scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) * scale;
      y = torch::matmul(dropout(torch::softmax(scores.masked_fill(hide, -INFINITY), -1)), qkv[2]);
    } else {
      y = slapo::schedule::memory_efficient_attention(
          qkv[0], qkv[1], qkv[2], slapo::schedule::AttentionMask{true, 0, scale},
          dropout->mask_spec_now());
    }
    y.backward(dy);
    for (torch::Tensor& t : qkv) t.mutable_grad().reset();
  };
  for (int i = 0; i < 2; ++i) once();
  for (auto _ : state) once();
  state.SetLabel(state.range(0) ? "memory_efficient_attention" : "ATen attention");
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{0, 1}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_AdamW)
    ->ArgsProduct({{0, 1, 2}, {0, 1, 2}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
