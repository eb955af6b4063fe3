#include "models/zoo.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/loss.h>
#include <torch/nn/functional/loss.h>

#include "core/error.h"
#include "models/blocks.h"
#include "schedule/sequence.h"

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

torch::Tensor tied_head(schedule::SlotModule& model, const char* embedding_slot, const torch::Tensor& h) {
  auto* wte = model.slot(embedding_slot).module.get<torch::nn::Embedding>().get();
  return torch::matmul(h, wte->weight.t());
}

class GptModelImpl : public schedule::SlotModule {
 public:
  explicit GptModelImpl(const ModelSpec& spec) : spec_(spec) {
    add_slot("wte", embedding(spec.vocab, spec.hidden));
    add_slot("wpe", embedding(spec.max_seq, spec.hidden));
    add_slot("drop", torch::nn::Dropout(spec.dropout));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(GptBlock(spec));
    add_slot("h", blocks);
    add_slot("ln_f", layer_norm(spec));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    torch::Tensor x = call("drop", call("wte", tokens) + call("wpe", positions(tokens)));
    return tied_head(*this, "wte", call("ln_f", call("h", x)));
  }

 private:
  ModelSpec spec_;
};
TORCH_MODULE(GptModel);

class BertEmbeddingsImpl : public schedule::SlotModule {
 public:
  explicit BertEmbeddingsImpl(const ModelSpec& spec) {
    add_slot("word", embedding(spec.vocab, spec.hidden));
    add_slot("position", embedding(spec.max_seq, spec.hidden));
    add_slot("token_type", embedding(2, spec.hidden));
    add_slot("norm", layer_norm(spec));
    add_slot("drop", torch::nn::Dropout(spec.dropout));
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
  torch::Tensor forward(const torch::Tensor& x) { return call("norm", call("act", call("dense", x))); }
};
TORCH_MODULE(BertHead);

class BertModelImpl : public schedule::SlotModule {
 public:
  explicit BertModelImpl(const ModelSpec& spec) {
    add_slot("embeddings", BertEmbeddings(spec));
    schedule::Sequence layers;
    for (int64_t i = 0; i < spec.layers; ++i) layers->push_back(BertLayer(spec));
    add_slot("encoder", layers);
    add_slot("head", BertHead(spec));
    decoder_bias_ = register_parameter("decoder_bias", torch::zeros({spec.vocab}));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    torch::Tensor h = call("head", call("encoder", call("embeddings", tokens)));
    auto* embeddings = slot("embeddings").module.get<BertEmbeddings>().get();
    auto* word = embeddings->slot("word").module.get<torch::nn::Embedding>().get();
    return torch::matmul(h, word->weight.t()) + decoder_bias_;
  }

 private:
  torch::Tensor decoder_bias_;
};
TORCH_MODULE(BertModel);

class MlpModelImpl : public schedule::SlotModule {
 public:
  explicit MlpModelImpl(const ModelSpec& spec) {
    add_slot("wte", embedding(spec.vocab, spec.hidden));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < spec.layers; ++i) blocks->push_back(MlpBlock(spec));
    add_slot("h", blocks);
    add_slot("ln_f", layer_norm(spec));
  }
  torch::Tensor forward(const torch::Tensor& tokens) {
    return tied_head(*this, "wte", call("ln_f", call("h", call("wte", tokens))));
  }
};
TORCH_MODULE(MlpModel);

}  // namespace

std::shared_ptr<schedule::SlotModule> build_model(const ModelSpec& spec, uint64_t seed) {
  torch::manual_seed(seed);
  if (spec.family == "gpt") return GptModel(spec).ptr();
  if (spec.family == "bert") return BertModel(spec).ptr();
  if (spec.family == "mlp") return MlpModel(spec).ptr();
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "model '", spec.preset, "': unknown family '", spec.family, "'");
}

torch::Tensor model_forward(schedule::SlotModule& model, const torch::Tensor& tokens) {
  if (auto* gpt = dynamic_cast<GptModelImpl*>(&model)) return gpt->forward(tokens);
  if (auto* bert = dynamic_cast<BertModelImpl*>(&model)) return bert->forward(tokens);
  if (auto* mlp = dynamic_cast<MlpModelImpl*>(&model)) return mlp->forward(tokens);
  SLAPO_FAIL(ErrorCode::kInvalidArgument, "model_forward: not a zoo model");
}

torch::Tensor language_model_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

std::string blocks_path(const ModelSpec& spec) { return spec.family == "bert" ? "encoder" : "h"; }

}  // namespace slapo::models
