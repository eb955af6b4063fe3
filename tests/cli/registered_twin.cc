// A program with a model of its own that is, module for module, the zoo's mlp-tiny — written here
// from the exported blocks, registered as family "mlp_twin" — for the test that a registered
// model is measured exactly as a zoo model of the same size (tests/cli/own_model_test.cc).

#include <torch/torch.h>

#include "cli/run_command_line.h"
#include "models/blocks.h"
#include "models/model_registry.h"
#include "models/token_embedding.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/pipeline.h"

namespace {

class TwinImpl : public slapo::schedule::SlotModule, public slapo::schedule::Pipelined {
 public:
  explicit TwinImpl(const slapo::models::ModelSpec& spec) {
    auto wte = add_slot("wte", slapo::models::TokenEmbedding(spec.vocab, spec.hidden));
    slapo::schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(slapo::models::MlpBlock(spec));
    add_slot("h", blocks);
    add_slot("ln_f", slapo::models::layer_norm(spec));
    add_slot("head", slapo::models::TiedLmHead(wte->weight));
  }
  std::vector<std::string> prologue_slots() const override { return {"wte"}; }
  std::vector<std::string> epilogue_slots() const override { return {"ln_f", "head"}; }
  std::string body_slot() const override { return "h"; }
  torch::Tensor prologue(const torch::Tensor& tokens) override { return call("wte", tokens); }
  torch::Tensor epilogue(const torch::Tensor& h) override { return call("head", call("ln_f", h)); }
};
TORCH_MODULE(Twin);

}  // namespace

int main(int argc, char** argv) {
  slapo::models::FamilyRegistration family;
  family.traits = slapo::models::family_traits("mlp");
  family.traits.name = "mlp_twin";
  family.build = [](const slapo::models::ModelSpec& spec) {
    return std::static_pointer_cast<slapo::schedule::SlotModule>(Twin(spec).ptr());
  };
  family.knobs = {"ckpt_ratio", "pp", "dp", "micro_batches", "batch_size", "seq_len"};
  slapo::models::register_family(std::move(family));
  slapo::models::ModelSpec spec = slapo::models::model_preset("mlp-tiny");
  spec.preset = "mlp-twin-tiny";
  spec.family = "mlp_twin";
  slapo::models::register_preset(spec);
  return slapo::cli::run_command_line(argc, argv);
}
