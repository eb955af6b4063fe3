// The space engine against a naive Cartesian-product filter written the obvious way, on the three
// spaces of docs/benchmarks.md. Run: ./build/benchmark/space_bench
//
// (a) training configurations for 64 devices: tp, pp, dp, micro-batch, gradient accumulation,
//     checkpointed layers; divisibility constraints and a linear memory budget.
// (b) cut points for 48 layers into 8 stages of 4–8 layers (38,165 sets).
// (c) the same for 96 layers into 16 stages (10,651,488,789 sets): counted.
//
// The naive filters are plain nested loops with the constraints as C++ code: the fastest a
// Cartesian filter gets. Where the product is astronomically large, they run over a fixed slice
// of it and report their rate; the full time is that rate extrapolated (counters below).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <sstream>
#include <string>

#include "space/compiled_space.h"
#include "space/space_file.h"

namespace {

using slapo::space::CompiledSpace;
using slapo::space::parse_space;
using slapo::space::PointView;

// ---------------------------------------------------------------------------------------------
// (a) training configurations for 64 devices

const char* kTrainingSpace = R"(
[parameters]
world_size = 64
num_layers = 48
global_batch = 512
[knobs]
tp          = { pow2 = [1, 64], mem = "down" }
pp          = { pow2 = [1, 64], mem = "down" }
dp          = { pow2 = [1, 64] }
micro_batch = { range = [1, 32], mem = "up" }
grad_accum  = { pow2 = [1, 64] }
ckpt_layers = { range = [0, "num_layers"], mem = "down" }
[constraints]
devices   = "tp * pp * dp == world_size"
tp_in_node = "tp <= 8"
layers    = "num_layers % pp == 0"
batch     = "micro_batch * grad_accum * dp == global_batch"
ckpt      = "ckpt_layers <= num_layers // pp"
memory    = "6 * micro_batch + 2 * (num_layers - ckpt_layers) <= 160"
)";

// The parameters arrive at run time, as they would from a space file: the compiler may hoist
// loop-invariant checks (any C++ filter gets that) but cannot fold the whole count.
volatile int g_world = 64, g_layers = 48, g_global_batch = 512;

uint64_t naive_training() {
  const int world = g_world, layers = g_layers, global_batch = g_global_batch;
  uint64_t valid = 0;
  for (int tp = 1; tp <= 64; tp *= 2)
    for (int pp = 1; pp <= 64; pp *= 2)
      for (int dp = 1; dp <= 64; dp *= 2)
        for (int mb = 1; mb <= 32; ++mb)
          for (int ga = 1; ga <= 64; ga *= 2)
            for (int ck = 0; ck <= layers; ++ck) {
              if (tp * pp * dp == world && tp <= 8 && layers % pp == 0 &&
                  mb * ga * dp == global_batch && ck <= layers / pp &&
                  6 * mb + 2 * (layers - ck) <= 160) {
                ++valid;
              }
            }
  return valid;
}

void BM_Training_Naive(benchmark::State& state) {
  uint64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(n = naive_training());
  state.counters["configs"] = static_cast<double>(n);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

// What a tuner without a space engine does: build every point of the product and ask whether it
// is valid (here through CompiledSpace::contains, i.e. the same constraint evaluator).
void BM_Training_GenericFilter(benchmark::State& state) {
  const CompiledSpace space = CompiledSpace::compile(parse_space(kTrainingSpace, "training.toml"));
  const auto& knobs = space.knobs();
  uint64_t n = 0, points = 0;
  for (auto _ : state) {
    n = 0;
    points = 0;
    slapo::Config config;
    std::vector<size_t> digit(knobs.size(), 0);
    for (const auto& k : knobs) config.set(k.name, k.domain[0]);
    for (;;) {
      ++points;
      n += space.contains(config).ok ? 1 : 0;
      size_t i = knobs.size();
      while (i-- > 0) {
        if (++digit[i] < knobs[i].domain.size()) {
          config.set(knobs[i].name, knobs[i].domain[digit[i]]);
          break;
        }
        digit[i] = 0;
        config.set(knobs[i].name, knobs[i].domain[0]);
      }
      if (i == static_cast<size_t>(-1)) break;
    }
    benchmark::DoNotOptimize(n);
  }
  state.counters["configs"] = static_cast<double>(n);
  state.counters["points"] = static_cast<double>(points);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void enumerate(benchmark::State& state, const std::string& text) {
  const CompiledSpace space = CompiledSpace::compile(parse_space(text, "cuts.toml"));
  uint64_t n = 0;
  for (auto _ : state) {
    n = 0;
    space.for_each([&](const PointView&) { ++n; });
    benchmark::DoNotOptimize(n);
  }
  state.counters["configs"] = static_cast<double>(n);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Training_Engine_Enumerate(benchmark::State& state) { enumerate(state, kTrainingSpace); }

void BM_Training_Engine_CompileAndCount(benchmark::State& state) {
  const auto declared = parse_space(kTrainingSpace, "training.toml");
  uint64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(n = CompiledSpace::compile(declared).size());
  state.counters["configs"] = static_cast<double>(n);
}

// ---------------------------------------------------------------------------------------------
// (b), (c) pipeline cut points

std::string scalar_cuts(int layers, int stages, int lo, int hi) {
  std::string s = "[knobs]\n";
  for (int i = 1; i < stages; ++i) {
    s += "c" + std::to_string(i) + " = { range = [1, " + std::to_string(layers - 1) + "] }\n";
  }
  s +=
      "[constraints]\nfirst = \"" + std::to_string(lo) + " <= c1 <= " + std::to_string(hi) + "\"\n";
  for (int i = 2; i < stages; ++i) {
    s += "gap" + std::to_string(i) + " = \"" + std::to_string(lo) + " <= c" + std::to_string(i) +
         " - c" + std::to_string(i - 1) + " <= " + std::to_string(hi) + "\"\n";
  }
  s += "last = \"" + std::to_string(lo) + " <= " + std::to_string(layers) + " - c" +
       std::to_string(stages - 1) + " <= " + std::to_string(hi) + "\"\n";
  return s;
}

std::string array_cuts(int layers, int stages, int lo, int hi) {
  return "[knobs]\ncuts = { layers = " + std::to_string(layers) +
         ", stages = " + std::to_string(stages) + ", min = " + std::to_string(lo) +
         ", max = " + std::to_string(hi) + " }\n";
}

// Nested loops over every cut in 1..layers-1, checking the stage lengths, for the first `limit`
// points of the product (the full product of (b) has 47^7 = 5.1e11 points).
uint64_t naive_cuts_slice(int layers, int stages, int lo, int hi, uint64_t limit,
                          uint64_t* visited) {
  std::vector<int> c(stages - 1, 1);
  uint64_t valid = 0, seen = 0;
  while (seen < limit) {
    ++seen;
    bool ok = true;
    int previous = 0;
    for (int i = 0; i <= stages - 1 && ok; ++i) {
      const int next = i < stages - 1 ? c[i] : layers;
      const int len = next - previous;
      ok = len >= lo && len <= hi;
      previous = next;
    }
    valid += ok;
    // Odometer increment, last cut fastest.
    int i = stages - 2;
    while (i >= 0 && ++c[i] > layers - 1) c[i--] = 1;
    if (i < 0) break;
  }
  *visited = seen;
  return valid;
}

void BM_Cuts48_Naive_Slice(benchmark::State& state) {
  const uint64_t limit = 50'000'000;
  uint64_t visited = 0, valid = 0;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(valid = naive_cuts_slice(g_layers, 8, 4, 8, limit, &visited));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * visited));
  const double product = std::pow(47.0, 7.0);
  state.counters["points_in_slice"] = static_cast<double>(visited);
  state.counters["full_product"] = product;
  // Seconds the whole product would take at the rate measured on the slice.
  state.counters["extrapolated_full_s"] =
      seconds / static_cast<double>(state.iterations()) * product / static_cast<double>(visited);
}

void BM_Cuts48_Engine_Enumerate_CutsKnob(benchmark::State& state) {
  enumerate(state, array_cuts(48, 8, 4, 8));
}
void BM_Cuts48_Engine_Enumerate_ScalarKnobs(benchmark::State& state) {
  enumerate(state, scalar_cuts(48, 8, 4, 8));
}

void compile_and_count(benchmark::State& state, const std::string& text) {
  const auto declared = parse_space(text, "cuts.toml");
  uint64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(n = CompiledSpace::compile(declared).size());
  state.counters["configs"] = static_cast<double>(n);
}

void BM_Cuts96_Engine_CompileAndCount_CutsKnob(benchmark::State& state) {
  compile_and_count(state, array_cuts(96, 16, 4, 8));
}
void BM_Cuts96_Engine_CompileAndCount_ScalarKnobs(benchmark::State& state) {
  compile_and_count(state, scalar_cuts(96, 16, 4, 8));
}

void BM_Cuts96_Engine_SampleScalarKnobs(benchmark::State& state) {
  const CompiledSpace space =
      CompiledSpace::compile(parse_space(scalar_cuts(96, 16, 4, 8), "cuts.toml"));
  slapo::Rng rng(1);
  space.size();
  for (auto _ : state) benchmark::DoNotOptimize(space.sample(rng));
}

// A wide space: `n` knobs of 8 values and `n` constraints linking each knob to the next, half
// affine (k_i + k_{i+1} <= 12), half guards (k_i % 2 == 0 or k_{i+1} <= 4). Its size is far past
// 2^64: what is timed is reading and compiling it (issue 18: 10,000 of each under 1 s).
std::string wide_space(int n) {
  std::ostringstream text;
  text << "[knobs]\n";
  for (int i = 0; i < n; ++i) text << "k" << i << " = { range = [1, 8] }\n";
  text << "[constraints]\n";
  for (int i = 0; i < n; ++i) {
    const int j = (i + 1) % n;
    if (i % 2 == 0)
      text << "c" << i << " = \"k" << i << " + k" << j << " <= 12\"\n";
    else
      text << "c" << i << " = \"k" << i << " % 2 == 0 or k" << j << " <= 4\"\n";
  }
  return text.str();
}

void BM_Wide_ParseAndCompile(benchmark::State& state) {
  const std::string text = wide_space(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const CompiledSpace space = CompiledSpace::compile(parse_space(text, "wide.toml"));
    benchmark::DoNotOptimize(space.knobs().size());
  }
  state.counters["knobs"] = static_cast<double>(state.range(0));
  state.counters["constraints"] = static_cast<double>(state.range(0));
}

}  // namespace

BENCHMARK(BM_Training_Naive)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Training_GenericFilter)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Training_Engine_Enumerate)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Training_Engine_CompileAndCount)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cuts48_Naive_Slice)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Cuts48_Engine_Enumerate_CutsKnob)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cuts48_Engine_Enumerate_ScalarKnobs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cuts96_Engine_CompileAndCount_CutsKnob)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cuts96_Engine_CompileAndCount_ScalarKnobs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Cuts96_Engine_SampleScalarKnobs)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Wide_ParseAndCompile)
    ->Arg(1000)
    ->Arg(3000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

BENCHMARK_MAIN();
