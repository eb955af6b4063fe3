// General module signatures: a Hugging Face-style block (hidden state and an optional attention
// mask in, hidden state and attention probabilities out) through the slot call path, checkpoint,
// fork_rng, sync, trace and the pipeline's carried tensors, each against the unscheduled model.
// Across processes: tests/dist (rank_program masked_pipeline).

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "error_of.h"
#include "masked_model.h"
#include "schedule/language/schedule.h"
#include "schedule/runtime/communicator.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::schedule {
namespace {

using testing::masked_tokens;
using testing::MaskedAttention;
using testing::MaskedModel;
using testing::MaskedModelImpl;

// Two copies of the model with the same weights.
std::pair<MaskedModel, MaskedModel> twins(int64_t layers, double dropout) {
  torch::manual_seed(11);
  MaskedModel a(layers, dropout);
  torch::manual_seed(11);
  MaskedModel b(layers, dropout);
  return {a, b};
}

struct Outcome {
  torch::Tensor logits;
  std::vector<torch::Tensor> probs;
  std::vector<torch::Tensor> grads;
};

// Forward and backward with the random stream at `seed`; the loss reaches both outputs of every
// block (the probabilities get a gradient too).
Outcome run(MaskedModel& model, const torch::Tensor& tokens, uint64_t seed) {
  for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
  torch::manual_seed(seed);
  auto [logits, probs] = model->forward(tokens);
  torch::Tensor loss = torch::nn::functional::cross_entropy(
      logits.reshape({-1, MaskedModelImpl::kVocab}), tokens.reshape({-1}));
  for (const torch::Tensor& p : probs) loss = loss + 0.1 * p.pow(2).sum();
  loss.backward();
  Outcome r{logits.detach(), {}, {}};
  for (const torch::Tensor& p : probs) r.probs.push_back(p.detach());
  for (auto& p : model->parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

void expect_same(const Outcome& a, const Outcome& b, double tol) {
  EXPECT_TRUE(torch::allclose(a.logits, b.logits, tol, tol));
  ASSERT_EQ(a.probs.size(), b.probs.size());
  for (size_t i = 0; i < a.probs.size(); ++i)
    EXPECT_TRUE(torch::allclose(a.probs[i], b.probs[i], tol, tol)) << "probabilities " << i;
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i)
    EXPECT_TRUE(torch::allclose(a.grads[i], b.grads[i], tol, tol)) << "gradient " << i;
}

TEST(ModuleSignatureTest, TheForwardsTypeIsReadIntoTheSignature) {
  const Signature attn = signature_of<MaskedAttention>();
  EXPECT_TRUE(attn.by_values);
  EXPECT_TRUE(attn.tuple_output);
  EXPECT_EQ(attn.outputs, 2u);
  ASSERT_EQ(attn.inputs.size(), 2u);
  EXPECT_EQ(attn.inputs[1], InputKind::kOptional);
  EXPECT_EQ(attn.text, "std::tuple<Tensor, Tensor>(const Tensor&, c10::optional<Tensor>)");
  EXPECT_FALSE(attn.plain_tensors());
  const Signature linear = signature_of<torch::nn::Linear>();
  EXPECT_EQ(linear.text, "Tensor(const Tensor&)");
  EXPECT_TRUE(linear.plain_tensors());
}

// A forward the policies cannot call through tensors (an integer argument).
struct ScaledImpl : torch::nn::Module {
  torch::Tensor forward(const torch::Tensor& x, int64_t k) { return x * k; }
};
TORCH_MODULE(Scaled);
// A forward whose first input is optional.
struct OptionalFirstImpl : SlotModule {
  OptionalFirstImpl() { add_slot("fc", torch::nn::Linear(4, 4)); }
  torch::Tensor forward(c10::optional<torch::Tensor> x, const torch::Tensor& y) {
    return call("fc", x.has_value() ? *x + y : y);
  }
};
TORCH_MODULE(OptionalFirst);
struct SignaturesHolderImpl : SlotModule {
  SignaturesHolderImpl() {
    add_slot("scaled", Scaled());
    add_slot("opt", OptionalFirst());
  }
};
TORCH_MODULE(SignaturesHolder);

TEST(ModuleSignatureTest, WhatCannotBeCalledThroughTensorsIsRefusedWithItsSignature) {
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(SignaturesHolder().ptr(), o);
  EXPECT_NE(error_of([&] { sch["scaled"].checkpoint(); }).find("checkpoint on 'scaled': supports"),
            std::string::npos);
  sch["opt.fc"].shard("weight", 0);
  EXPECT_NE(error_of([&] {
              sch["opt"].sync("bwd_post", "all_reduce");
            }).find("the forward's first input is optional"),
            std::string::npos);
}

TEST(ModuleSignatureTest, CheckpointedMaskedBlocksAreExactWithAndWithoutTheMask) {
  auto [plain, scheduled] = twins(3, 0.2);
  auto sch = create_schedule(scheduled.ptr());
  sch["h.0"].checkpoint();       // a tuple-returning block
  sch["h.1.attn"].checkpoint();  // its attention, called with an optional mask
  plain->train();
  scheduled->train();
  const torch::Tensor tokens = masked_tokens(4, 6);
  const Outcome a = run(plain, tokens, 5), b = run(scheduled, tokens, 5);
  expect_same(a, b, 0);  // bit-exact: the recompute draws the same dropout masks
  // The mask changes the result (the check above can fail): padding keys get no probability.
  EXPECT_EQ(a.probs[0].index({0, 0, 0, 5}).item<float>(), 0.0f);

  // Without the mask: the carried list is the hidden state alone, the blocks' optional input is
  // absent, and the checkpoint saves and recomputes with it absent.
  auto body = [](MaskedModel& m) -> SequenceImpl& {
    return dynamic_cast<SequenceImpl&>(*m->slot("h").module.ptr());
  };
  const torch::Tensor x = torch::randn({2, 5, MaskedModelImpl::kHidden}, torch::requires_grad());
  torch::Tensor xa = x.detach().clone().requires_grad_(true),
                xb = x.detach().clone().requires_grad_(true);
  torch::manual_seed(9);
  Values ya = body(plain).forward_values({xa}, 0, 3);
  ya[0].sum().backward();
  torch::manual_seed(9);
  Values yb = body(scheduled).forward_values({xb}, 0, 3);
  yb[0].sum().backward();
  ASSERT_EQ(yb.size(), 1u);
  EXPECT_TRUE(torch::equal(ya[0], yb[0]));
  EXPECT_TRUE(torch::equal(xa.grad(), xb.grad()));
}

TEST(ModuleSignatureTest, AForkedTupleBlockLeavesTheDefaultStreamAlone) {
  auto [plain, forked] = twins(2, 0.5);
  auto sch = create_schedule(forked.ptr());
  sch["h.0.attn"].fork_rng(1);
  sch["h.1"].fork_rng(2);
  forked->train();
  plain->train();
  const torch::Tensor tokens = masked_tokens(2, 4);
  torch::manual_seed(3);
  const torch::Tensor expected_next = torch::rand({8});
  torch::manual_seed(3);
  auto [logits, probs] = forked->forward(tokens);
  // Every random draw happened in a forked stream: the default one is where it started.
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected_next));
  torch::manual_seed(3);
  auto [plain_logits, plain_probs] = plain->forward(tokens);
  EXPECT_FALSE(torch::equal(torch::rand({8}), expected_next));  // the plain model drew from it
  EXPECT_EQ(probs.size(), 2u);
}

TEST(ModuleSignatureTest, SyncsOnATupleBlockActOnTheHiddenStateAndKeepTheMath) {
  auto [plain, scheduled] = twins(2, 0.0);
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(scheduled.ptr(), o);
  sch["h.0.attn.out"].shard("weight", 1).sync("fwd_post", "all_reduce");
  sch["h.0.attn"].sync("bwd_post", "all_reduce");  // the hidden state, not the mask
  sch["h.1.attn.qkv"].shard("weight", 0).shard("bias", 0);
  sch["h.1"].sync("fwd_post", "all_reduce");  // the first output of a tuple
  const torch::Tensor tokens = masked_tokens(2, 5);
  expect_same(run(plain, tokens, 1), run(scheduled, tokens, 1), 1e-6);
}

TEST(ModuleSignatureTest, ATracedMaskedAttentionHasAGraphPerPresentInput) {
  auto [plain, traced] = twins(2, 0.1);
  plain->eval();  // the graph's dropout would draw its own masks
  traced->eval();
  auto sch = create_schedule(traced.ptr());
  sch["h.0.attn"].trace();
  sch["h.1"].trace();
  const torch::Tensor tokens = masked_tokens(2, 5);
  expect_same(run(plain, tokens, 2), run(traced, tokens, 2), 1e-5);
  EXPECT_NE(sch["h.0.attn"].print_graph().find("aten::softmax"), std::string::npos);
  // Without the mask: another graph, traced with the mask absent.
  auto& body_a = dynamic_cast<SequenceImpl&>(*plain->slot("h").module.ptr());
  auto& body_b = dynamic_cast<SequenceImpl&>(*traced->slot("h").module.ptr());
  const torch::Tensor x = torch::randn({2, 5, MaskedModelImpl::kHidden});
  EXPECT_TRUE(torch::allclose(body_a.forward_values({x}, 0, 2)[0],
                              body_b.forward_values({x}, 0, 2)[0], 1e-5, 1e-5));
}

TEST(ModuleSignatureTest, PipelineMicroBatchesCarryTheMask) {
  auto [plain, piped] = twins(4, 0.0);
  const torch::Tensor tokens = masked_tokens(4, 6);
  const Outcome full = run(plain, tokens, 0);
  for (auto& p : piped->parameters()) p.mutable_grad() = torch::Tensor();
  PipelineRunner runner(piped.ptr(), plan_stages(*piped, {"h.1"}), nullptr,
                        {2, PipelineSchedule::kOneFOneB});
  const double loss = runner.run(
      tokens, tokens,
      [](const torch::Tensor& logits, const torch::Tensor& targets) {
        return torch::nn::functional::cross_entropy(logits.reshape({-1, MaskedModelImpl::kVocab}),
                                                    targets.reshape({-1}));
      },
      0, 0);
  EXPECT_TRUE(std::isfinite(loss));
  // The probabilities' term is not in the pipeline's loss: compare with the plain cross-entropy.
  for (auto& p : plain->parameters()) p.mutable_grad() = torch::Tensor();
  torch::Tensor logits = std::get<0>(plain->forward(tokens));
  torch::nn::functional::cross_entropy(logits.reshape({-1, MaskedModelImpl::kVocab}),
                                       tokens.reshape({-1}))
      .backward();
  const auto a = plain->parameters(), b = piped->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::allclose(a[i].grad(), b[i].grad(), 1e-5, 1e-6)) << "gradient " << i;
  EXPECT_FALSE(full.grads.empty());
}

}  // namespace
}  // namespace slapo::schedule
