#include "models/zoo.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/loss.h>

#include "core/error.h"
#include "models/blocks.h"
#include "models/fused_lm_head.h"
#include "models/llama.h"
#include "models/model_registry.h"
#include "models/token_embedding.h"
#include "models/training_batch.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::models {

namespace {

torch::nn::Embedding embedding(int64_t n, int64_t d) {
  torch::nn::Embedding e(n, d);
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(e->weight, 0.0, 0.02);
  return e;
}

// The positions 0..seq-1 as a [1, seq] tensor.
torch::Tensor positions(const torch::Tensor& tokens) {
  return torch::arange(tokens.size(1), tokens.options().dtype(torch::kLong)).unsqueeze(0);
}

// The zoo's models split into prologue | body | epilogue, so the pipeline can run them by stage.
// forward is always epilogue(body(prologue(tokens))).
class ZooModel : public schedule::SlotModule, public schedule::Pipelined {
 public:
  torch::Tensor forward(const torch::Tensor& tokens) {
    return epilogue(call(body_slot(), prologue(tokens)));
  }
  std::string body_slot() const override { return body_; }
  // With the LM head fused with the loss (template knob fused_lm_loss), a training step's loss
  // comes from the final norm's output without the logits. The fused loss is the zoo's language
  // model loss, which is what `loss` is for every zoo family.
  torch::Tensor epilogue_loss(const schedule::Values& carried, const torch::Tensor& targets,
                              const schedule::LossFn& loss) override {
    if (has_slot("head") && has_slot("ln_f")) {
      if (auto* fused = dynamic_cast<FusedLmHeadImpl*>(slot("head").module.ptr().get()))
        return fused->loss(call("ln_f", carried.at(0)), targets);
    }
    return schedule::Pipelined::epilogue_loss(carried, targets, loss);
  }

 protected:
  explicit ZooModel(std::string body) : body_(std::move(body)) {}

 private:
  std::string body_;
};

class GptModelImpl : public ZooModel {
 public:
  explicit GptModelImpl(const ModelSpec& spec) : ZooModel("h") {
    auto wte = add_slot("wte", TokenEmbedding(spec.vocab, spec.hidden));
    add_slot("wpe", embedding(spec.max_seq, spec.hidden));
    add_slot("drop", dropout(spec.dropout));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(GptBlock(spec, i));
    add_slot("h", blocks);
    add_slot("ln_f", layer_norm(spec));
    add_slot("head", TiedLmHead(wte->weight));
  }
  std::vector<std::string> prologue_slots() const override { return {"wte", "wpe", "drop"}; }
  std::vector<std::string> epilogue_slots() const override { return {"ln_f", "head"}; }
  torch::Tensor prologue(const torch::Tensor& tokens) override {
    return call("drop", call("wte", tokens) + call("wpe", positions(tokens)));
  }
  torch::Tensor epilogue(const torch::Tensor& h) override { return call("head", call("ln_f", h)); }
};
TORCH_MODULE(GptModel);

class BertEmbeddingsImpl : public schedule::SlotModule {
 public:
  explicit BertEmbeddingsImpl(const ModelSpec& spec) {
    add_slot("word", TokenEmbedding(spec.vocab, spec.hidden));
    add_slot("position", embedding(spec.max_seq, spec.hidden));
    add_slot("token_type", embedding(2, spec.hidden));
    add_slot("norm", layer_norm(spec));
    add_slot("drop", dropout(spec.dropout));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    torch::Tensor x = call("word", tokens) + call("position", positions(tokens)) +
                      call("token_type", torch::zeros_like(tokens));
    return call("drop", call("norm", x));
  }
};
TORCH_MODULE(BertEmbeddings);

class BertHeadImpl : public schedule::SlotModule {
 public:
  explicit BertHeadImpl(const ModelSpec& spec) {
    add_slot("dense", torch::nn::Linear(spec.hidden, spec.hidden));
    add_slot("act", torch::nn::GELU());
    add_slot("norm", layer_norm(spec));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return call("norm", call("act", call("dense", x)));
  }
};
TORCH_MODULE(BertHead);

class BertModelImpl : public ZooModel {
 public:
  explicit BertModelImpl(const ModelSpec& spec) : ZooModel("encoder") {
    auto embeddings = add_slot("embeddings", BertEmbeddings(spec));
    schedule::Sequence layers;
    for (int64_t i = 0; i < spec.layers; ++i) layers->push_back(BertLayer(spec));
    add_slot("encoder", layers);
    add_slot("head", BertHead(spec));
    const torch::Tensor word = embeddings->slot("word").module.get<TokenEmbedding>()->weight;
    add_slot("decoder", TiedLmHead(word, /*with_bias=*/true));
  }
  std::vector<std::string> prologue_slots() const override { return {"embeddings"}; }
  std::vector<std::string> epilogue_slots() const override { return {"head", "decoder"}; }
  torch::Tensor prologue(const torch::Tensor& tokens) override {
    return call("embeddings", tokens);
  }
  torch::Tensor epilogue(const torch::Tensor& h) override {
    return call("decoder", call("head", h));
  }
  // With the decoder fused with the loss (fused_lm_loss), only the masked positions — the 15% of
  // tokens that have a target — go through the head and the decoder: the others add nothing to
  // the masked-LM loss nor to any gradient (BERT's "sparse predictions").
  torch::Tensor epilogue_loss(const schedule::Values& carried, const torch::Tensor& targets,
                              const schedule::LossFn& loss) override {
    auto* fused = dynamic_cast<FusedLmHeadImpl*>(slot("decoder").module.ptr().get());
    if (fused == nullptr) return schedule::Pipelined::epilogue_loss(carried, targets, loss);
    const torch::Tensor& h = carried.at(0);
    const torch::Tensor flat = targets.reshape({-1});
    const torch::Tensor kept = (flat != kIgnoredTarget).nonzero().squeeze(1);
    const torch::Tensor rows = h.reshape({-1, h.size(-1)}).index_select(0, kept);
    return fused->loss(call("head", rows), flat.index_select(0, kept));
  }
};
TORCH_MODULE(BertModel);

class MlpModelImpl : public ZooModel {
 public:
  explicit MlpModelImpl(const ModelSpec& spec) : ZooModel("h") {
    auto wte = add_slot("wte", TokenEmbedding(spec.vocab, spec.hidden));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(MlpBlock(spec));
    add_slot("h", blocks);
    add_slot("ln_f", layer_norm(spec));
    add_slot("head", TiedLmHead(wte->weight));
  }
  std::vector<std::string> prologue_slots() const override { return {"wte"}; }
  std::vector<std::string> epilogue_slots() const override { return {"ln_f", "head"}; }
  torch::Tensor prologue(const torch::Tensor& tokens) override { return call("wte", tokens); }
  torch::Tensor epilogue(const torch::Tensor& h) override { return call("head", call("ln_f", h)); }
};
TORCH_MODULE(MlpModel);

class LlamaModelImpl : public ZooModel {
 public:
  explicit LlamaModelImpl(const ModelSpec& spec) : ZooModel("h") {
    add_slot("wte", TokenEmbedding(spec.vocab, spec.hidden));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(LlamaBlock(spec));
    add_slot("h", blocks);
    add_slot("ln_f", RmsNorm(spec.hidden, spec.layer_norm_eps));
    add_slot("head",
             torch::nn::Linear(torch::nn::LinearOptions(spec.hidden, spec.vocab).bias(false)));
  }
  std::vector<std::string> prologue_slots() const override { return {"wte"}; }
  std::vector<std::string> epilogue_slots() const override { return {"ln_f", "head"}; }
  torch::Tensor prologue(const torch::Tensor& tokens) override { return call("wte", tokens); }
  torch::Tensor epilogue(const torch::Tensor& h) override { return call("head", call("ln_f", h)); }
};
TORCH_MODULE(LlamaModel);

}  // namespace

std::shared_ptr<schedule::SlotModule> build_model(const ModelSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  if (const FamilyRegistration* own = registered_family(spec.family)) {
    auto model = own->build(spec);
    SLAPO_CHECK(model != nullptr && dynamic_cast<schedule::Pipelined*>(model.get()) != nullptr,
                ErrorCode::kInvalidArgument, "model '", spec.preset, "' of family '", spec.family,
                "': its build function must return a SlotModule that is a schedule::Pipelined");
    return model;
  }
  if (spec.family == "gpt" || spec.family == "gpt_neo") return GptModel(spec).ptr();
  if (spec.family == "bert") return BertModel(spec).ptr();
  if (spec.family == "mlp") return MlpModel(spec).ptr();
  if (spec.family == "llama") return LlamaModel(spec).ptr();
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "model '", spec.preset, "': unknown family '",
             spec.family, "'");
}

namespace {

schedule::Pipelined& pipelined_of(schedule::SlotModule& model, const char* what) {
  auto* pipelined = dynamic_cast<schedule::Pipelined*>(&model);
  SLAPO_CHECK(pipelined != nullptr, ErrorCode::kInvalidArgument, what,
              ": not a schedule::Pipelined model");
  return *pipelined;
}

// Prologue, then the body through its slot (so that what the schedule put on the blocks
// applies): the carried tensors after the last block.
schedule::Values model_body(schedule::SlotModule& model, schedule::Pipelined& pipelined,
                            const torch::Tensor& tokens) {
  schedule::Values carried = pipelined.prologue_values(tokens);
  if (carried.size() == 1) return {model.call(pipelined.body_slot(), carried[0])};
  // Blocks that take more than the hidden state (a mask): the body's blocks through the carried
  // tensors, as a pipeline stage runs them.
  auto* body =
      dynamic_cast<schedule::SequenceImpl*>(model.slot(pipelined.body_slot()).module.ptr().get());
  SLAPO_CHECK(body != nullptr, ErrorCode::kInvalidArgument, "the body slot '",
              pipelined.body_slot(), "' is not a Sequence, so it cannot carry ", carried.size(),
              " tensors");
  return body->forward_values(std::move(carried), 0, static_cast<int64_t>(body->size()));
}

}  // namespace

torch::Tensor model_forward(schedule::SlotModule& model, const torch::Tensor& tokens) {
  // A zoo model or a registered family's.
  schedule::Pipelined& pipelined = pipelined_of(model, "model_forward");
  return pipelined.epilogue_values(model_body(model, pipelined, tokens));
}

torch::Tensor model_loss(
    schedule::SlotModule& model, const torch::Tensor& tokens, const torch::Tensor& targets,
    const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& loss) {
  schedule::Pipelined& pipelined = pipelined_of(model, "model_loss");
  return pipelined.epilogue_loss(model_body(model, pipelined, tokens), targets, loss);
}

torch::Tensor language_model_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                              targets.reshape({-1}));
}

std::string blocks_path(const ModelSpec& spec) { return spec.traits().blocks; }

}  // namespace slapo::models
