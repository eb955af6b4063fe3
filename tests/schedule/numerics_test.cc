// Numerics are sacred: a schedule must not change the math. Every primitive and template is
// checked against the original model, outputs and gradients, with dropout on.

#include <string>
#include <tuple>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/error.h"
#include "models/templates.h"
#include "models/training_batch.h"
#include "models/zoo.h"
#include "schedule/kernels/simd_dispatch.h"
#include "schedule/language/build.h"
#include "schedule/language/schedule.h"
#include "schedule/language/verify.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {
namespace {

struct Fixture {
  models::ModelSpec spec;
  std::shared_ptr<SlotModule> original, scheduled;
  ScheduleHandle sch;
  torch::Tensor tokens, targets;
};

Fixture make(const std::string& preset, uint64_t seed = 3) {
  Fixture f;
  f.spec = models::model_preset(preset);
  f.original = models::build_model(f.spec, seed);
  f.scheduled = models::build_model(f.spec, seed);
  f.sch = create_schedule(f.scheduled);
  torch::manual_seed(seed + 100);
  f.tokens = torch::randint(f.spec.vocab, {3, f.spec.max_seq}, torch::kLong);
  f.targets = torch::randint(f.spec.vocab, {3, f.spec.max_seq}, torch::kLong);
  return f;
}

ForwardLoss lm(const Fixture& f) {
  return [&f](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), f.tokens);
    return std::make_pair(logits, models::language_model_loss(logits, f.targets));
  };
}

Config config(const std::string& json) { return Config::from_json(json); }

class CheckpointTest : public ::testing::TestWithParam<std::tuple<std::string, double>> {};

TEST_P(CheckpointTest, BitIdenticalLossAndEveryGradient) {
  const auto& [preset, ratio] = GetParam();
  Fixture f = make(preset);
  Config c;
  c.set("ckpt_ratio", ratio);
  models::apply_template(*f.sch, f.spec, models::default_template(f.spec), c);
  EXPECT_EQ(static_cast<int64_t>(f.sch->record().checkpointed.size()),
            models::checkpointed_blocks(f.spec, c));
  const VerifyReport r = verify(*f.original, *f.scheduled, lm(f), 11);
  EXPECT_TRUE(r.within(0.0)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());
  EXPECT_EQ(r.grads.size(), f.original->parameters().size());
  // The random stream after the step is where the original leaves it.
  torch::manual_seed(5);
  lm(f)(*f.original).second.backward();
  const torch::Tensor after_original = torch::rand({8});
  torch::manual_seed(5);
  lm(f)(*f.scheduled).second.backward();
  EXPECT_TRUE(torch::equal(after_original, torch::rand({8})));
}

INSTANTIATE_TEST_SUITE_P(EveryRatio, CheckpointTest,
                         ::testing::Combine(::testing::Values("gpt-tiny", "bert-tiny", "mlp-tiny",
                                                              "llama-tiny", "gpt-neo-tiny"),
                                            ::testing::Values(0.0, 0.5, 1.0)));

TEST(NumericsTest, ForkedStreamsInsideACheckpointAreReplayed) {
  Fixture a = make("gpt-tiny"), b = make("gpt-tiny");
  for (Fixture* f : {&a, &b}) {
    (*f->sch)["h.0.mlp.drop"].fork_rng(17);
    (*f->sch)["h.1.attn.attn_drop"].fork_rng(18);
  }
  b.sch["h.0"].checkpoint();
  b.sch["h.1"].checkpoint();
  const VerifyReport r = verify(*a.scheduled, *b.scheduled, lm(a), 2);
  EXPECT_TRUE(r.within(0.0)) << r.to_string();
  // A forked stream draws other masks than the default one.
  const VerifyReport vs_original = verify(*a.original, *a.scheduled, lm(a), 2);
  EXPECT_GT(vs_original.output.max_abs, 0.0);
}

TEST(NumericsTest, ForkRngSeedsDecideTheMasks) {
  auto masks = [](uint64_t seed) {
    auto drop = torch::nn::Dropout(0.5);
    struct HolderImpl : SlotModule {
      explicit HolderImpl(torch::nn::Dropout d) { add_slot("drop", d); }
      torch::Tensor forward(const torch::Tensor& x) { return call("drop", x); }
    };
    auto holder = std::make_shared<HolderImpl>(drop);
    auto sch = create_schedule(holder);
    sch["drop"].fork_rng(seed);
    torch::manual_seed(0);
    return holder->forward(torch::ones({64}));
  };
  EXPECT_TRUE(torch::equal(masks(1), masks(1)));
  EXPECT_FALSE(torch::equal(masks(1), masks(2)));
}

TEST(NumericsTest, CheckpointWithSeveralTensorInputs) {
  struct PairImpl : SlotModule {
    PairImpl() {
      add_slot("fc", torch::nn::Linear(8, 8));
      add_slot("drop", torch::nn::Dropout(0.3));
    }
    torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
      return call("drop", call("fc", a) * b + a);
    }
  };
  struct OuterImpl : SlotModule {
    OuterImpl() { add_slot("pair", std::make_shared<PairImpl>()); }
    torch::Tensor forward(const torch::Tensor& a, const torch::Tensor& b) {
      return call("pair", a, b);
    }
  };
  auto run = [](bool checkpointed) {
    torch::manual_seed(1);
    auto model = std::make_shared<OuterImpl>();
    auto sch = create_schedule(model);
    if (checkpointed) sch["pair"].checkpoint();
    torch::manual_seed(2);
    torch::Tensor a = torch::randn({4, 8}, torch::requires_grad());
    torch::Tensor b = torch::randn({4, 8}, torch::requires_grad());
    torch::manual_seed(3);
    model->forward(a, b).pow(2).sum().backward();
    return std::vector<torch::Tensor>{a.grad(), b.grad(), model->parameters()[0].grad(),
                                      model->parameters()[1].grad()};
  };
  const auto plain = run(false), ckpt = run(true);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::equal(plain[i], ckpt[i])) << i;
}

TEST(NumericsTest, CheckpointIsSkippedInEvalMode) {
  Fixture f = make("gpt-tiny");
  f.sch["h.0"].checkpoint();
  f.original->eval();
  f.scheduled->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::equal(models::model_forward(*f.original, f.tokens),
                           models::model_forward(*f.scheduled, f.tokens)));
}

class ReplaceTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(ReplaceTest, OutputsAndGradientsWithin1e6) {
  const auto& [preset, attn] = GetParam();
  Fixture f = make(preset);
  models::apply_template(*f.sch, f.spec, models::default_template(f.spec),
                         config("{\"attn\": \"" + attn + "\"}"));
  const VerifyReport r = verify(*f.original, *f.scheduled, lm(f), 4);
  EXPECT_TRUE(r.within(1e-6)) << r.to_string();
  if (attn == "fused_qkv") {
    // qkv replaces q, k and v: its gradient is theirs, stacked.
    EXPECT_EQ(r.unmatched.size(), 2u * 3 * 2 + 2u * 2);
    for (int64_t i = 0; i < f.spec.layers; ++i) {
      const std::string blk = models::blocks_path(f.spec) + "." + std::to_string(i) + ".attn.";
      auto params = f.original->named_parameters();
      torch::Tensor expected =
          torch::cat({params[blk + "q_proj.weight"].grad(), params[blk + "k_proj.weight"].grad(),
                      params[blk + "v_proj.weight"].grad()});
      torch::Tensor got = f.scheduled->named_parameters()[blk + "qkv.weight"].grad();
      EXPECT_LE((expected - got).abs().max().item<double>(), 1e-6);
    }
  } else {
    EXPECT_TRUE(r.unmatched.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAttention, ReplaceTest,
                         ::testing::Combine(::testing::Values("gpt-tiny", "bert-tiny"),
                                            ::testing::Values("fused_qkv", "baddbmm",
                                                              "memory_efficient")));

// (knobs, the SIMD level the kernels run at)
class LossCurveTest : public ::testing::TestWithParam<std::tuple<std::string, simd::Level>> {
 protected:
  void SetUp() override {
    if (static_cast<int>(std::get<1>(GetParam())) > static_cast<int>(simd::level()))
      GTEST_SKIP() << "not on this CPU";
    previous_ = simd::set_cap(std::get<1>(GetParam()));
  }
  void TearDown() override { simd::set_cap(previous_); }

 private:
  simd::Level previous_ = simd::Level::kAvx512;
};

TEST_P(LossCurveTest, TwentyAdamWStepsFollowTheSameLossCurve) {
  Fixture f = make("gpt-tiny");
  models::apply_template(*f.sch, f.spec, "gpt",
                         config(R"({"ckpt_ratio": 0.5, )" + std::get<0>(GetParam()) + "}"));
  auto train = [&](SlotModule& model) {
    torch::optim::AdamW optimizer(unique_parameters(model), torch::optim::AdamWOptions(1e-3));
    std::vector<double> losses;
    model.train();
    for (int step = 0; step < 20; ++step) {
      torch::manual_seed(1000 + step);
      DropoutScope scope(static_cast<uint64_t>(step), 0);  // the same masks for both models
      optimizer.zero_grad();
      torch::Tensor loss =
          models::language_model_loss(models::model_forward(model, f.tokens), f.targets);
      loss.backward();
      optimizer.step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const auto a = train(*f.original), b = train(*f.scheduled);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "step " << i;
  EXPECT_LT(a.back(), a.front());  // it trains
}

// The attention variants, and the eager fusions (bias + dropout + residual, the residual add with
// the norm after it, bias + GELU), with the kernels at every SIMD level.
INSTANTIATE_TEST_SUITE_P(
    Knobs, LossCurveTest,
    ::testing::Combine(
        ::testing::Values(
            R"("attn": "baddbmm")", R"("attn": "memory_efficient")",
            R"("fuse_bias_dropout_add": true, "fuse_bias_gelu": true)",
            R"("fuse_layer_norm": true, "fuse_bias_gelu": true, "attn": "memory_efficient")"),
        ::testing::Values(simd::Level::kBaseline, simd::Level::kAvx2, simd::Level::kAvx512)));

TEST(NumericsTest, TemplateRejectsUnknownKnobsBeforeBuilding) {
  Fixture f = make("mlp-tiny");
  try {
    models::apply_template(*f.sch, f.spec, "mlp", config(R"({"attn": "fused_qkv"})"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("knob 'attn' is not understood by schedule template 'mlp'"),
        std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(f.sch->record().applied.empty());
  EXPECT_THROW(models::apply_template(*f.sch, f.spec, "mlp", config(R"({"ckpt_ratio": 1.5})")),
               Error);
  EXPECT_THROW(models::apply_template(*f.sch, f.spec, "gpt", config("{}")), Error);
}

// ---- what each family learns from a window of tokens ----------------------------------------

TEST(TrainingBatchTest, NextTokenFamiliesPredictTheFollowingToken) {
  torch::manual_seed(3);
  const torch::Tensor window = torch::randint(128, {3, 17}, torch::kLong);
  for (const char* preset : {"gpt-tiny", "mlp-tiny"}) {
    const models::TrainingBatch b = models::training_batch(models::model_preset(preset), window);
    EXPECT_TRUE(b.inputs.equal(window.narrow(1, 0, 16))) << preset;
    EXPECT_TRUE(b.targets.equal(window.narrow(1, 1, 16))) << preset;
  }
}

TEST(TrainingBatchTest, BertPredictsFifteenPercentOfEachSequenceMaskedInItsInput) {
  const models::ModelSpec spec = models::model_preset("bert-tiny");
  ASSERT_TRUE(spec.traits().masked_lm);
  torch::manual_seed(5);
  const int64_t batch = 4000, seq = 20;
  const torch::Tensor window = torch::randint(spec.vocab - 1, {batch, seq + 1}, torch::kLong);
  const models::TrainingBatch b = models::training_batch(spec, window);
  const torch::Tensor tokens = window.narrow(1, 0, seq);
  const torch::Tensor predicted = b.targets != models::kIgnoredTarget;
  // Exactly round(0.15 · 20) = 3 positions per sequence, their targets the original tokens.
  EXPECT_EQ(models::masked_positions(seq), 3);
  EXPECT_TRUE(predicted.sum(1).eq(3).all().item<bool>());
  EXPECT_TRUE(b.targets.masked_select(predicted).equal(tokens.masked_select(predicted)));
  // Every other position reads its token as it is.
  EXPECT_TRUE(b.inputs.masked_select(~predicted).equal(tokens.masked_select(~predicted)));
  // Of the predicted positions, 80% read [MASK], 10% a random token, 10% the token itself.
  const torch::Tensor read = b.inputs.masked_select(predicted);
  const torch::Tensor original = tokens.masked_select(predicted);
  const double n = static_cast<double>(read.numel());
  const double masked = read.eq(models::mask_token(spec)).sum().item<double>() / n;
  const double kept = read.eq(original).sum().item<double>() / n;
  EXPECT_NEAR(masked, 0.8, 0.01);
  EXPECT_NEAR(kept, 0.1 + 0.1 / static_cast<double>(spec.vocab), 0.01);  // a random draw may hit it
  EXPECT_NEAR(1 - masked - kept, 0.1, 0.01);
  // Positions are spread over the sequence, not always the same ones.
  const torch::Tensor per_position = predicted.sum(0).to(torch::kDouble) / batch;
  EXPECT_LT((per_position - 0.15).abs().max().item<double>(), 0.03) << per_position;
}

TEST(TrainingBatchTest, TheMaskedLossOfABatchIsTheMeanOfItsPartsLosses) {
  // What pipelines (micro-batches) and data parallelism compute: the mean of equal parts' means.
  const models::ModelSpec spec = models::model_preset("bert-tiny");
  torch::manual_seed(7);
  const models::TrainingBatch b =
      models::training_batch(spec, torch::randint(spec.vocab, {8, 17}, torch::kLong));
  const torch::Tensor logits = torch::randn({8, 16, spec.vocab}, torch::kDouble);
  const double whole = models::language_model_loss(logits, b.targets).item<double>();
  double parts = 0;
  for (int64_t i = 0; i < 4; ++i)
    parts += models::language_model_loss(logits.narrow(0, 2 * i, 2), b.targets.narrow(0, 2 * i, 2))
                 .item<double>() /
             4;
  EXPECT_NEAR(whole, parts, 1e-12);
  // Over every position the loss would be another number: the targets do leave positions out.
  EXPECT_GT(std::fabs(whole - models::language_model_loss(logits, b.inputs).item<double>()), 1e-3);
}

}  // namespace
}  // namespace slapo::schedule
