// Weight loading (docs/benchmarks.md, docs/weights.md). Run: ./build/benchmark/weights_bench
//
// The gpt2 preset (124M parameters, 12 layers, hidden 768, vocab 50257) saved once under the
// zoo's names as safetensors and as torch.save writes it (files in $TMPDIR, about 500 MB each),
// then loaded into an already built model: open, map the names, check every shape and dtype, copy
// every parameter. Model construction is not timed. The files are in the page cache after the
// first iteration: a warm read, as when a checkpoint is loaded again by each trial.
//
// BM_LoadGpt2/0: safetensors; BM_LoadGpt2/1: torch.save. Counter GB/s: parameter bytes per second.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include <torch/torch.h>

#include "models/weights/weights_file.h"
#include "models/zoo.h"

namespace {

using namespace slapo;

const std::string& saved(bool torch_save) {
  static const std::string dir =
      (std::filesystem::temp_directory_path() / ("slapo-weights-bench-" + std::to_string(getpid())))
          .string();
  static const std::string safetensors = dir + "/gpt2.safetensors", pt = dir + "/gpt2.pt";
  static const bool written = [] {
    std::filesystem::create_directories(dir);
    auto model = models::build_model(models::model_preset("gpt2"), 0);
    models::save_weights(*model, safetensors);
    models::save_weights(*model, pt);
    return true;
  }();
  (void)written;
  return torch_save ? pt : safetensors;
}

void BM_LoadGpt2(benchmark::State& state) {
  torch::set_num_threads(2);
  const models::ModelSpec spec = models::model_preset("gpt2");
  const std::string& path = saved(state.range(0) == 1);
  auto model = models::build_model(spec, 1);
  double bytes = 0;
  for (const auto& p : model->parameters()) bytes += static_cast<double>(p.nbytes());
  for (auto _ : state) {
    const models::LoadReport r = models::load_weights(*model, spec, path);
    benchmark::DoNotOptimize(r.loaded);
  }
  state.counters["GB/s"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["params_M"] = static_cast<double>(spec.parameter_count()) / 1e6;
}
BENCHMARK(BM_LoadGpt2)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  std::filesystem::remove_all(std::filesystem::path(saved(false)).parent_path());
  return 0;
}
