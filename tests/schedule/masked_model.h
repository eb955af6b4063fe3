#pragma once
// A model written the Hugging Face way, for the tests of general module signatures: its blocks
// take the hidden state and an optional additive attention mask, and return the new hidden state
// with the attention probabilities, `std::tuple<Tensor, Tensor>(const Tensor&,
// c10::optional<Tensor>)`. The prologue makes the mask from the padding tokens (id 0), so the
// mask travels with the hidden state between pipeline stages. Used by tests/schedule and by the
// distributed rank program.

#include <cmath>
#include <tuple>

#include <torch/torch.h>

#include "schedule/language/sequence.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::testing {

using torch::Tensor;

class MaskedAttentionImpl : public schedule::SlotModule {
 public:
  MaskedAttentionImpl(int64_t hidden, int64_t heads, double dropout) : heads_(heads) {
    add_slot("qkv", torch::nn::Linear(hidden, 3 * hidden));
    add_slot("out", torch::nn::Linear(hidden, hidden));
    add_slot("drop", torch::nn::Dropout(dropout));
  }
  std::tuple<Tensor, Tensor> forward(const Tensor& x, c10::optional<Tensor> mask) {
    const int64_t b = x.size(0), s = x.size(1), d = x.size(2), dh = d / heads_;
    auto qkv = call("qkv", x).view({b, s, 3, heads_, dh}).permute({2, 0, 3, 1, 4});
    Tensor scores = torch::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(double(dh));
    if (mask.has_value()) scores = scores + *mask;
    Tensor probs = torch::softmax(scores, -1);
    Tensor y = torch::matmul(call("drop", probs), qkv[2]).transpose(1, 2).reshape({b, s, d});
    return {call("out", y), probs};
  }

 private:
  int64_t heads_;
};
TORCH_MODULE(MaskedAttention);

class MaskedBlockImpl : public schedule::SlotModule {
 public:
  MaskedBlockImpl(int64_t hidden, int64_t heads, double dropout) {
    add_slot("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
    add_slot("attn", MaskedAttention(hidden, heads, dropout));
    add_slot("fc", torch::nn::Linear(hidden, hidden));
  }
  std::tuple<Tensor, Tensor> forward(const Tensor& x, c10::optional<Tensor> mask) {
    auto [a, probs] = call<std::tuple<Tensor, Tensor>>("attn", call("norm", x), mask);
    Tensor h = x + a;
    return {h + torch::gelu(call("fc", h)), probs};
  }
};
TORCH_MODULE(MaskedBlock);

class MaskedModelImpl : public schedule::SlotModule, public schedule::Pipelined {
 public:
  static constexpr int64_t kVocab = 32, kHidden = 16, kHeads = 2;
  MaskedModelImpl(int64_t layers, double dropout) {
    add_slot("embed", torch::nn::Embedding(kVocab, kHidden));
    schedule::Sequence blocks;
    for (int64_t i = 0; i < layers; ++i) blocks->push_back(MaskedBlock(kHidden, kHeads, dropout));
    add_slot("h", blocks);
    add_slot("head", torch::nn::Linear(kHidden, kVocab));
  }
  std::string body_slot() const override { return "h"; }
  std::vector<std::string> prologue_slots() const override { return {"embed"}; }
  std::vector<std::string> epilogue_slots() const override { return {"head"}; }
  // [hidden, mask]: -1e4 added to the scores of padding keys, [batch, 1, 1, seq].
  schedule::Values prologue_values(const Tensor& tokens) override {
    Tensor mask = (tokens == 0).to(torch::kFloat).mul(-1e4).view({tokens.size(0), 1, 1, -1});
    return {call("embed", tokens), mask};
  }
  Tensor epilogue_values(const schedule::Values& carried) override {
    return call("head", carried.at(0));
  }
  // The whole model with every block's attention probabilities.
  std::tuple<Tensor, std::vector<Tensor>> forward(const Tensor& tokens) {
    auto& body = dynamic_cast<schedule::SequenceImpl&>(*slot("h").module.ptr());
    schedule::Values probs;
    schedule::Values out =
        body.forward_values(prologue_values(tokens), 0, static_cast<int64_t>(body.size()), &probs);
    return {epilogue_values(out), probs};
  }
};
TORCH_MODULE(MaskedModel);

// Tokens with padding (id 0) at the end of every other sequence.
inline Tensor masked_tokens(int64_t batch, int64_t seq) {
  Tensor t = torch::randint(1, MaskedModelImpl::kVocab, {batch, seq}, torch::kLong);
  for (int64_t i = 0; i < batch; i += 2) t[i].narrow(0, seq - 2, 2).fill_(0);
  return t;
}

}  // namespace slapo::testing
