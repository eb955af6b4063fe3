// A model of your own, scheduled without editing it: checkpointing and a replaced module,
// verified against the original (outputs and gradients). Built as `custom_model_example`:
//   ./build/examples/custom_model_example

#include <iostream>

#include <torch/torch.h>

#include "schedule/language/build.h"
#include "schedule/language/schedule.h"
#include "schedule/language/sequence.h"
#include "schedule/language/verify.h"

using slapo::schedule::SlotModule;

// A residual MLP block. Children are slots, reached by name: that is what makes it schedulable.
class ResidualBlockImpl : public SlotModule {
 public:
  explicit ResidualBlockImpl(int64_t d) {
    add_slot("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})));
    add_slot("up", torch::nn::Linear(d, 4 * d));
    add_slot("act", torch::nn::GELU());
    add_slot("down", torch::nn::Linear(4 * d, d));
    add_slot("drop", torch::nn::Dropout(0.1));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return x + call("drop", call("down", call("act", call("up", call("norm", x)))));
  }
};
TORCH_MODULE(ResidualBlock);

class TinyNetImpl : public SlotModule {
 public:
  TinyNetImpl(int64_t d, int64_t depth) {
    slapo::schedule::Sequence blocks;
    for (int64_t i = 0; i < depth; ++i) blocks->push_back(ResidualBlock(d));
    add_slot("blocks", blocks);
    add_slot("head", torch::nn::Linear(d, 1));
  }
  torch::Tensor forward(const torch::Tensor& x) { return call("head", call("blocks", x)); }
};
TORCH_MODULE(TinyNet);

// GELU written as x·Φ(x) with erf: the same function as torch::nn::GELU, another implementation.
class ErfGeluImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x) {
    return 0.5 * x * (1.0 + torch::erf(x * M_SQRT1_2));
  }
};
TORCH_MODULE(ErfGelu);

int main() {
  torch::manual_seed(0);
  TinyNet original(64, 4);
  torch::manual_seed(0);
  TinyNet scheduled(64, 4);

  auto sch = slapo::schedule::create_schedule(scheduled.ptr());
  sch["blocks.0"].checkpoint();
  sch["blocks.1"].checkpoint();
  for (int i = 0; i < 4; ++i) sch["blocks." + std::to_string(i) + ".act"].replace(ErfGelu());
  sch["blocks.1"].cut_pipeline_stage();
  const slapo::schedule::BuildResult built = slapo::schedule::build(*sch);
  std::cout << sch->to_string() << built.plan_text();

  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({32, 64});
  auto run = [&](torch::nn::Module& m) {
    torch::Tensor y = dynamic_cast<TinyNetImpl&>(m).forward(x);
    return std::make_pair(y, y.pow(2).mean());
  };
  const slapo::schedule::VerifyReport report =
      slapo::schedule::verify(*original, *scheduled, run, 7);
  std::cout << report.to_string(3);
  const bool ok = report.within(1e-6);
  std::cout << (ok ? "verified\n" : "MISMATCH\n");
  return ok ? 0 : 1;
}
