// Tuning a model slapo did not write, with the whole slapo-tune command line: a token-shift mixer
// (each block mixes every token with the one before it, then a gated MLP; no attention), defined
// here, registered as family "shift_mixer" with presets, then handed to slapo. Built as
// `own_model_example`:
//
//   ./build/examples/own_model_example single-device --space examples/own_model/shift-mixer.toml
//       (continued) --db own.db --trials 6
//   ./build/examples/own_model_example single-node --nproc 2 --space ... --db own.db
//   ./build/examples/own_model_example verify --space ... --config '{"ckpt_ratio": 0.5}'
//
// Every runner works — in process, subprocess with its fork server, ranks — because they all
// start this program again, which registers the model before it reads its arguments.

#include <torch/torch.h>

#include "cli/run_command_line.h"
#include "models/model_registry.h"
#include "models/token_embedding.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/pipeline.h"

namespace {

using slapo::schedule::SlotModule;

// x + W·[x_t; x_{t−1}] : each token mixed with the one before it (zeros before the first).
class TokenShiftImpl : public SlotModule {
 public:
  explicit TokenShiftImpl(int64_t hidden) {
    add_slot("mix", torch::nn::Linear(2 * hidden, hidden));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor previous =
        torch::constant_pad_nd(x, {0, 0, 1, 0}).narrow(1, 0, x.size(1));  // shift by one token
    return call("mix", torch::cat({x, previous}, -1));
  }
};
TORCH_MODULE(TokenShift);

// norm → shift → residual; norm → gated MLP (up · sigmoid(gate) → down) → residual.
class MixerBlockImpl : public SlotModule {
 public:
  MixerBlockImpl(int64_t hidden, int64_t ffn) {
    add_slot("norm_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    add_slot("shift", TokenShift(hidden));
    add_slot("norm_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    add_slot("up", torch::nn::Linear(hidden, 2 * ffn));
    add_slot("down", torch::nn::Linear(ffn, hidden));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const torch::Tensor h = x + call("shift", call("norm_1", x));
    const std::vector<torch::Tensor> up_gate = call("up", call("norm_2", h)).chunk(2, -1);
    return h + call("down", up_gate[0] * torch::sigmoid(up_gate[1]));
  }
};
TORCH_MODULE(MixerBlock);

// tokens → embedding | blocks | norm → head: a SlotModule and a schedule::Pipelined, so that
// pipelines can cut its blocks into stages.
class ShiftMixerImpl : public SlotModule, public slapo::schedule::Pipelined {
 public:
  explicit ShiftMixerImpl(const slapo::models::ModelSpec& spec) {
    add_slot("embed", slapo::models::TokenEmbedding(spec.vocab, spec.hidden));
    slapo::schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(MixerBlock(spec.hidden, spec.ffn));
    add_slot("blocks", blocks);
    add_slot("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({spec.hidden})));
    add_slot("head", torch::nn::Linear(spec.hidden, spec.vocab));
  }
  std::vector<std::string> prologue_slots() const override { return {"embed"}; }
  std::vector<std::string> epilogue_slots() const override { return {"norm", "head"}; }
  std::string body_slot() const override { return "blocks"; }
  torch::Tensor prologue(const torch::Tensor& tokens) override { return call("embed", tokens); }
  torch::Tensor epilogue(const torch::Tensor& h) override { return call("head", call("norm", h)); }
};
TORCH_MODULE(ShiftMixer);

void register_shift_mixer() {
  slapo::models::FamilyRegistration family;
  family.traits.name = "shift_mixer";
  family.traits.description =
      "token-shift mixer (an example's own model): embed | blocks.<i> | norm, head";
  family.traits.blocks = "blocks";
  family.traits.embedding = "embed";
  family.traits.head = "head";
  family.traits.attention = false;
  family.traits.position_embedding = false;
  family.traits.tied_head = false;
  family.build = [](const slapo::models::ModelSpec& spec) {
    return std::static_pointer_cast<SlotModule>(ShiftMixer(spec).ptr());
  };
  // What its template understands: slapo applies checkpointing and the pipeline to its blocks,
  // the runner data parallelism, batch and sequence; `decompose` is this template's own.
  family.knobs = {"ckpt_ratio",    "ckpt_layers",       "pp",         "dp",      "cuts",
                  "micro_batches", "pipeline_schedule", "batch_size", "seq_len", "decompose"};
  family.apply = [](slapo::schedule::Schedule& sch, const slapo::models::ModelSpec& spec,
                    const slapo::models::TemplateConfig& c) {
    if (!c.decompose) return;
    for (int64_t i = 0; i < spec.layers; ++i) {
      sch["blocks." + std::to_string(i) + ".up"].decompose();
      sch["blocks." + std::to_string(i) + ".down"].decompose();
    }
  };
  slapo::models::register_family(std::move(family));

  slapo::models::ModelSpec tiny;
  tiny.preset = "shift-mixer-tiny";
  tiny.family = "shift_mixer";
  tiny.vocab = 128;
  tiny.max_seq = 32;
  tiny.hidden = 32;
  tiny.layers = 4;
  tiny.ffn = 64;
  tiny.dropout = 0;
  slapo::models::register_preset(tiny);
  slapo::models::ModelSpec small = tiny;
  small.preset = "shift-mixer-small";
  small.vocab = 4096;
  small.max_seq = 256;
  small.hidden = 256;
  small.layers = 6;
  small.ffn = 1024;
  slapo::models::register_preset(small);
}

}  // namespace

int main(int argc, char** argv) {
  register_shift_mixer();
  return slapo::cli::run_command_line(argc, argv);
}
