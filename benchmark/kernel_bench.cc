// The project's fused CPU kernels against the ATen sequences they replace, forward + backward,
// side by side in one run (docs/benchmarks.md). Run: ./build/benchmark/kernel_bench
//
// BM_BiasGelu/<impl>/<rows>/<cols>/<threads>: y = gelu(x + b), then backward of y·dy into x and b.
//   impl 0: ATen (x + b, then gelu; autograd: gelu_backward, a sum for the bias)
//   impl 1: slapo::bias_gelu (one pass each way)
//   shapes: gpt-mini's MLP (batch 8 × 128 tokens, ffn 1024) and gpt2's (1 × 1024 tokens, ffn 3072)

#include <benchmark/benchmark.h>

#include <torch/torch.h>

#include "schedule/fused_bias_gelu.h"

namespace {

void BM_BiasGelu(benchmark::State& state) {
  torch::set_num_threads(static_cast<int>(state.range(3)));
  const bool fused = state.range(0) == 1;
  const int64_t rows = state.range(1), cols = state.range(2);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({rows, cols}).requires_grad_(true);
  torch::Tensor b = torch::randn({cols}).requires_grad_(true);
  const torch::Tensor dy = torch::randn({rows, cols});
  auto once = [&] {
    torch::Tensor y = fused ? slapo::schedule::bias_gelu(x, b) : torch::gelu(x + b);
    y.backward(dy);
    x.mutable_grad().reset();
    b.mutable_grad().reset();
  };
  for (int i = 0; i < 3; ++i) once();
  for (auto _ : state) once();
  state.SetLabel(fused ? "slapo::bias_gelu" : "ATen add + gelu");
  state.SetItemsProcessed(state.iterations() * rows * cols);
}
BENCHMARK(BM_BiasGelu)
    ->ArgsProduct({{0, 1}, {1024}, {1024}, {1, 2}})
    ->ArgsProduct({{0, 1}, {1024}, {3072}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
