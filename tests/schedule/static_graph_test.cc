// The static-graph primitives (decompose, trace, find, fuse, replace and checkpoint on matches) and
// the fused kernels behind fuse: each checked against the original model or the ATen sequence.

#include <functional>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/error.h"
#include "error_of.h"
#include "models/eager_fusions.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/kernels/fused_kernels.h"
#include "schedule/kernels/fused_lm_loss.h"
#include "schedule/kernels/keyed_mask.h"
#include "schedule/kernels/simd_dispatch.h"
#include "schedule/language/build.h"
#include "schedule/language/decomposed_linear.h"
#include "schedule/language/replay.h"
#include "schedule/language/schedule.h"
#include "schedule/language/verify.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {
namespace {

// A zoo model under test, an identical copy (same preset, same seed) to compare it with, and the
// schedule of the one under test.
struct ModelPair {
  ModelPair(const std::string& preset, uint64_t seed)
      : spec(models::model_preset(preset)),
        original(models::build_model(spec, seed)),
        scheduled(models::build_model(spec, seed)),
        sch(create_schedule(scheduled)) {}
  const models::ModelSpec spec;
  const std::shared_ptr<SlotModule> original, scheduled;
  const ScheduleHandle sch;
};

void apply_gpt_template(const std::string& json) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto sch = create_schedule(models::build_model(spec, 0));
  models::apply_template(*sch, spec, "gpt", Config::from_json(json));
}

// A zoo model's (output, loss) on fixed tokens, for verify().
ForwardLoss zoo_run(const torch::Tensor& tokens) {
  return [tokens](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), tokens);
    return std::make_pair(logits, models::language_model_loss(logits, tokens));
  };
}

torch::Tensor tiny_tokens(uint64_t seed, int64_t batch = 2, int64_t seq = 16) {
  torch::manual_seed(seed);
  return torch::randint(128, {batch, seq}, torch::kLong);
}

const char* const kAddGelu = R"(
graph(%x, %b, %alpha, %approximate):
  %y = aten::add(%x, %b, %alpha)
  %z = aten::gelu(%y, %approximate)
  return (%z))";

// ---- decompose -------------------------------------------------------------------------------

TEST(DecomposeTest, SameParametersSameMathAndBeforeShardOnly) {
  const ModelPair m("gpt-tiny", 3);
  models::apply_template(*m.sch, m.spec, "gpt",
                         Config::from_json(R"({"decompose": true, "ckpt_ratio": 0.5})"));
  m.sch["h.0.attn.q_proj"].decompose();
  EXPECT_NE(std::dynamic_pointer_cast<DecomposedLinearImpl>(m.sch["h.1.mlp.fc_out"].module()),
            nullptr);
  EXPECT_NE(m.sch->to_string().find("sch[\"h.1.mlp.fc_in\"].decompose()"), std::string::npos)
      << m.sch->to_string();
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(0)), 5);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());  // same parameter names
  // Replays from its text.
  auto fresh = create_schedule(models::build_model(m.spec, 3));
  replay(*fresh, parse_schedule_text(m.sch->to_string()), models::replace_with_zoo_module);
  EXPECT_EQ(fresh->to_string(), m.sch->to_string());
  // Misuse.
  ScheduleOptions o;
  o.tp_size = 2;
  auto planned = create_schedule(models::build_model(m.spec, 1), o);
  (*planned)["h.0.mlp.fc_in"].shard("weight", 0);
  EXPECT_NE(
      error_of([&] {
        (*planned)["h.0.mlp.fc_in"].decompose();
      }).find("decompose on 'h.0.mlp.fc_in': must come before shard, but 'weight' is already sharded"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              (*planned)["h.0.ln_1"].decompose();
            }).find("only an nn::Linear can be decomposed"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_gpt_template(R"({"decompose": 1})");
            }).find("knob 'decompose': expected true or false"),
            std::string::npos);
}

// ---- trace and find
// ------------------------------------------------------------------------------

// A forward that reads a tensor value in C++: a trace would freeze the branch it took.
class BranchyImpl : public SlotModule {
 public:
  BranchyImpl() { add_slot("fc", torch::nn::Linear(4, 4)); }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = call("fc", x);
    return x.sum().item<float>() > 0 ? y : -y;
  }
};
TORCH_MODULE(Branchy);

class BranchyHolderImpl : public SlotModule {
 public:
  BranchyHolderImpl() { add_slot("inner", Branchy()); }
  torch::Tensor forward(const torch::Tensor& x) { return call("inner", x); }
};

TEST(TraceTest, TracedModulesRunInPlaceWithTheSameMath) {
  const ModelPair m("gpt-tiny", 7);
  m.scheduled->train();
  m.sch["h.0"].trace({torch::randn({2, 16, 32})});
  m.sch["h.1.mlp.fc_in"].decompose();
  m.sch["h.1.mlp"].trace();  // by need
  const std::string ir = m.sch["h.0"].print_graph();
  EXPECT_NE(ir.find("aten::gelu"), std::string::npos) << ir;
  EXPECT_NE(ir.find("slapo::keyed_dropout"), std::string::npos) << ir;  // dropout stays keyed
  EXPECT_NE(m.sch->to_string().find("sch[\"h.0\"].trace()"), std::string::npos);
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(1)), 9);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());
  EXPECT_GT(r.grads.size(), 20u);
  // Another shape: traced again, still right.
  EXPECT_TRUE(verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(2, 3, 8)), 10).within(1e-5));
  EXPECT_NE(m.sch["h.1.mlp"].print_graph().find("aten::matmul"), std::string::npos);
}

TEST(TraceTest, ACheckpointedModuleRunsItsGraphUnderCheckpointing) {
  const ModelPair m("gpt-tiny", 8);
  m.sch["h.0"].checkpoint().trace();
  m.sch["h.1"].trace().checkpoint();
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(3)), 11);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_NE(m.sch["h.1"].print_graph().find("slapo::keyed_dropout"), std::string::npos);
}

TEST(TraceTest, FindByPathAndByPattern) {
  auto sch = create_schedule(models::build_model(models::model_preset("gpt-tiny"), 1));
  EXPECT_EQ(sch->find(R"(h\.\d+\.mlp\.fc_(in|out))"),
            (std::vector<std::string>{"h.0.mlp.fc_in", "h.0.mlp.fc_out", "h.1.mlp.fc_in",
                                      "h.1.mlp.fc_out"}));
  EXPECT_TRUE(sch["h.0"].find("nothing.*").empty());
  EXPECT_NE(error_of([&] { sch->find("(("); }).find("is not a regular expression"),
            std::string::npos);
  Schedule& mlp = sch["h.0.mlp"];
  EXPECT_NE(error_of([&] {
              mlp.find_pattern("graph(%x):\n  return (%x)");
            }).find("trace() the module first"),
            std::string::npos);
  mlp.trace();
  EXPECT_NE(
      error_of([&] { mlp.find_pattern("graph(%x):\n  return (%x)"); }).find("needs a traced graph"),
      std::string::npos);
  auto other = create_schedule(models::build_model(models::model_preset("gpt-tiny"), 1));
  Schedule& traced = (*other)["h.0.mlp"];
  traced.trace({torch::randn({2, 16, 32})});
  const auto gelu = traced.find_pattern(R"(
graph(%x, %approximate):
  %y = aten::gelu(%x, %approximate)
  return (%y))");
  ASSERT_EQ(gelu.size(), 1u);
  EXPECT_EQ(gelu[0].kinds, std::vector<std::string>{"aten::gelu"});
  EXPECT_EQ(gelu[0].path, "h.0.mlp");
  EXPECT_EQ(gelu[0].to_string(), "match 0 of 'h.0.mlp' (aten::gelu)");
  EXPECT_TRUE(
      traced
          .find_pattern(
              "graph(%x, %dim, %dtype):\n  %y = aten::softmax(%x, %dim, %dtype)\n  return (%y)")
          .empty());
  // A pattern written as C++: traced on examples of any shape.
  const auto from_cpp =
      traced.find_pattern([](const std::vector<torch::Tensor>& in) { return torch::gelu(in[0]); },
                          {torch::randn({3, 5})});
  ASSERT_EQ(from_cpp.size(), 1u);
  EXPECT_EQ(from_cpp[0].kinds, std::vector<std::string>{"aten::gelu"});
  // Constants are part of it: tanh-approximated GELU is another pattern.
  EXPECT_TRUE(
      traced
          .find_pattern(
              [](const std::vector<torch::Tensor>& in) { return torch::gelu(in[0], "tanh"); },
              {torch::randn({3, 5})})
          .empty());
  EXPECT_NE(error_of([&] {
              traced.find_pattern("graph(%x):\n  %y = aten::gelu(%x\n");
            }).find("malformed pattern"),
            std::string::npos);
}

TEST(TraceTest, AForwardThatReadsValuesIsRefused) {
  // Seeded: the weights, the example and the check's random inputs are the same every run.
  for (uint64_t seed = 0; seed < 4; ++seed) {
    torch::manual_seed(seed);
    auto sch = create_schedule(std::make_shared<BranchyHolderImpl>());
    const std::string error = error_of([&] { sch["inner"].trace({torch::randn({2, 4})}); });
    EXPECT_NE(error.find("cannot trace 'inner'"), std::string::npos)
        << "seed " << seed << ": " << error;
  }
}

// A Linear that computes twice its output: the same parameters (names, shapes) as the Linear it
// replaces and another forward — which a graph traced before the replacement would not compute.
class DoubledLinearImpl : public torch::nn::Module {
 public:
  explicit DoubledLinearImpl(const torch::nn::LinearImpl& like) {
    weight = register_parameter("weight", like.weight.detach().clone());
    bias = register_parameter("bias", like.bias.detach().clone());
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return 2 * torch::nn::functional::linear(x, weight, bias);
  }
  torch::Tensor weight, bias;
};
TORCH_MODULE(DoubledLinear);

DoubledLinear doubled(Schedule& linear) {
  return DoubledLinear(*std::dynamic_pointer_cast<torch::nn::LinearImpl>(linear.module()));
}

TEST(TraceTest, AChangeBelowOrAtATracedModuleTracesItAgain) {
  const ModelPair m("gpt-tiny", 21);
  // The reference: the same replacements, nothing traced.
  auto reference = models::build_model(m.spec, 21);
  auto ref = create_schedule(reference);
  for (const char* path : {"h.0.mlp.fc_in", "h.1.mlp.fc_in"}) ref[path].replace(doubled(ref[path]));

  Schedule& h0 = m.sch["h.0"];
  h0.trace({torch::randn({2, 16, 32})});
  const GraphMatch gelu =
      h0.find_pattern("graph(%x, %a):\n  %y = aten::gelu(%x, %a)\n  return (%y)").at(0);
  m.sch["h.0.mlp.fc_in"].replace(doubled(m.sch["h.0.mlp.fc_in"]));  // below the traced block
  Schedule& fc = m.sch["h.1.mlp.fc_in"];
  fc.trace({torch::randn({2, 16, 32})});
  fc.replace(doubled(fc));  // the traced module itself
  // The graphs were forgotten, and matches found in them are stale.
  EXPECT_NE(error_of([&] { h0.print_graph(); }).find("not traced yet"), std::string::npos);
  EXPECT_NE(error_of([&] { h0.fuse(gelu); }).find("stale match 0 of 'h.0'"), std::string::npos);

  const VerifyReport r = verify(*reference, *m.scheduled, zoo_run(tiny_tokens(21)), 22);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());
  // Traced again, of the modules as they are now.
  EXPECT_NE(h0.print_graph().find("aten::mul"), std::string::npos) << h0.print_graph();
  EXPECT_NE(fc.print_graph().find("aten::mul"), std::string::npos) << fc.print_graph();
  // Without the replacements the model computes something else: the check above can fail.
  EXPECT_FALSE(verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(21)), 22).within(1e-3));
}

TEST(TraceTest, WhatAGraphCannotFollowIsRefusedAndChangesNothing) {
  const ModelPair m("gpt-tiny", 23);
  m.sch["h.0.mlp.fc_in"].decompose();
  m.sch["h.0"].trace({torch::randn({2, 16, 32})});
  m.sch["h.0"].fuse("bias_gelu");
  m.sch["h.1"].trace();
  const std::string before = m.sch->to_string();
  // A graph rewritten for the module as it was cannot follow a replacement below it.
  EXPECT_NE(error_of([&] { m.sch["h.0.mlp.fc_out"].replace(doubled(m.sch["h.0.mlp.fc_out"])); })
                .find("replace on 'h.0.mlp.fc_out': 'h.0' above it is traced and its graph was "
                      "rewritten"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              m.sch["h.0.mlp.fc_out"].decompose();
            }).find("decompose on 'h.0.mlp.fc_out': 'h.0' above it is traced"),
            std::string::npos);
  // A graph has no place for a submodule's checkpoint, random stream or nested graph.
  EXPECT_NE(
      error_of([&] { m.sch["h.1.mlp"].checkpoint(); })
          .find("checkpoint on 'h.1.mlp': 'h.1' above it runs as a traced graph, which cannot "
                "hold a submodule's checkpoint (apply it to 'h.1' itself, or checkpoint a match"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              m.sch["h.1.attn"].fork_rng();
            }).find("fork_rng on 'h.1.attn': 'h.1' above it runs as a traced graph"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              m.sch["h.1.mlp"].trace();
            }).find("trace on 'h.1.mlp': 'h.1' above it is traced already"),
            std::string::npos);
  EXPECT_EQ(m.sch->to_string(), before);
  EXPECT_TRUE(verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(23)), 24).within(1e-5));

  // The other order: trace above what a graph cannot hold is refused the same way.
  const ModelPair other("gpt-tiny", 25);
  other.sch["h.0.mlp"].checkpoint();
  other.sch["h.1.attn"].fork_rng();
  EXPECT_NE(error_of([&] { other.sch["h.0"].trace(); })
                .find("trace on 'h.0': 'h.0.mlp' below it is checkpointed, which a graph of 'h.0' "
                      "cannot hold"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              other.sch["h.1"].trace();
            }).find("'h.1.attn' below it is given its own random stream"),
            std::string::npos);
}

// ---- the fused kernels, against the ATen sequences, at every SIMD level this CPU has ------------

class FusedKernelTest : public ::testing::TestWithParam<simd::Level> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(simd::level()))
      GTEST_SKIP() << "not on this CPU";
    previous_ = simd::set_cap(GetParam());
  }
  void TearDown() override { simd::set_cap(previous_); }

 private:
  simd::Level previous_ = simd::Level::kAvx512;
};

// Gradients of `a` and `b` (clones with their own leaves) after backward of y·dy.
void expect_same(const torch::Tensor& got, const torch::Tensor& want, double rtol, double atol,
                 const char* what) {
  EXPECT_TRUE(got.sizes() == want.sizes() && torch::allclose(got, want, rtol, atol))
      << what << ": max difference " << (got - want).abs().max().item<float>();
}

TEST_P(FusedKernelTest, BiasGeluMatchesATen) {
  torch::manual_seed(3);
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{4, 16, 64}, std::vector<int64_t>{7, 33}}) {
    torch::Tensor x = (torch::randn(shape) * 3).requires_grad_(true);
    torch::Tensor b = torch::randn({shape.back()}).requires_grad_(true);
    torch::Tensor x2 = x.detach().clone().requires_grad_(true),
                  b2 = b.detach().clone().requires_grad_(true);
    const torch::Tensor dy = torch::randn(shape);
    torch::Tensor fused = bias_gelu(x, b);
    torch::Tensor reference = torch::gelu(x2 + b2);
    expect_same(fused, reference, 1e-5, 1e-6, "output");
    fused.backward(dy);
    reference.backward(dy);
    expect_same(x.grad(), x2.grad(), 1e-5, 1e-5, "dx");
    expect_same(b.grad(), b2.grad(), 1e-4, 1e-4, "db");
  }
  // Far tails: no NaN or inf from the exponent tricks.
  const torch::Tensor tails = torch::tensor({-200.0f, -30.0f, 0.0f, 30.0f, 200.0f}).unsqueeze(0);
  expect_same(bias_gelu(tails, torch::zeros({5})), torch::gelu(tails), 1e-5, 1e-6, "tails");
  EXPECT_NE(error_of([&] {
              bias_gelu(torch::ones({2, 3}), torch::ones({4}));
            }).find("does not match the last axis"),
            std::string::npos);
}

TEST_P(FusedKernelTest, BiasDropoutAddDrawsKeyedDropoutsMask) {
  torch::manual_seed(4);
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{4, 16, 64}, std::vector<int64_t>{3, 5, 33}}) {
    torch::Tensor x = torch::randn(shape).requires_grad_(true);
    torch::Tensor b = torch::randn({shape.back()}).requires_grad_(true);
    torch::Tensor r = torch::randn(shape).requires_grad_(true);
    torch::Tensor x2 = x.detach().clone().requires_grad_(true),
                  b2 = b.detach().clone().requires_grad_(true),
                  r2 = r.detach().clone().requires_grad_(true);
    const torch::Tensor dy = torch::randn(shape);
    KeyedDropout dropout(0.25, 99);
    torch::Tensor fused, reference;
    {
      DropoutScope scope(5, 40);
      fused = bias_dropout_add(x, b, r, 0.25, 99);
      reference = r2 + dropout->forward(x2 + b2);
    }
    expect_same(fused, reference, 1e-6, 1e-6, "output");
    // Some dropped, most kept.
    const double zeros = (fused - r).eq(0).to(torch::kDouble).mean().item<double>();
    EXPECT_GT(zeros, 0.1);
    EXPECT_LT(zeros, 0.4);
    fused.backward(dy);  // outside the scope: backward uses the key of the forward
    reference.backward(dy);
    expect_same(x.grad(), x2.grad(), 1e-6, 1e-6, "dx");
    expect_same(b.grad(), b2.grad(), 1e-5, 1e-5, "db");
    expect_same(r.grad(), r2.grad(), 0, 0, "dresidual");
  }
  EXPECT_NE(error_of([&] {
              bias_dropout_add(torch::ones({2, 3}), torch::ones({3}), torch::ones({2, 4}), 0.1, 1);
            }).find("does not have the shape"),
            std::string::npos);
}

TEST_P(FusedKernelTest, LayerNormMatchesATen) {
  torch::manual_seed(5);
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{4, 16, 64}, std::vector<int64_t>{7, 33}, std::vector<int64_t>{1, 5}}) {
    const int64_t h = shape.back();
    torch::Tensor x = (torch::randn(shape) * 2 + 1).requires_grad_(true);
    torch::Tensor w = torch::randn({h}).requires_grad_(true);
    torch::Tensor b = torch::randn({h}).requires_grad_(true);
    torch::Tensor x2 = x.detach().clone().requires_grad_(true),
                  w2 = w.detach().clone().requires_grad_(true),
                  b2 = b.detach().clone().requires_grad_(true);
    const torch::Tensor dy = torch::randn(shape);
    torch::Tensor fused = layer_norm(x, w, b, 1e-5);
    torch::Tensor reference = torch::layer_norm(x2, {h}, w2, b2, 1e-5);
    expect_same(fused, reference, 1e-5, 1e-5, "output");
    fused.backward(dy);
    reference.backward(dy);
    expect_same(x.grad(), x2.grad(), 1e-4, 1e-5, "dx");
    expect_same(w.grad(), w2.grad(), 1e-4, 1e-4, "dw");
    expect_same(b.grad(), b2.grad(), 1e-4, 1e-4, "db");
  }
  EXPECT_NE(error_of([&] {
              layer_norm(torch::ones({2, 3}), torch::ones({4}), torch::ones({4}), 1e-5);
            }).find("do not match the last axis"),
            std::string::npos);
}

// (x + r, layer_norm(x + r)) against ATen's add and layer norm: both outputs, and the gradients
// through both (the sum used further on, as a pre-LN block's residual stream), through the norm
// alone, and through the sum alone.
TEST_P(FusedKernelTest, AddLayerNormMatchesATen) {
  torch::manual_seed(6);
  for (int uses = 0; uses < 3; ++uses) {  // 0: both outputs, 1: the norm only, 2: the sum only
    const std::vector<int64_t> shape = {3, 17, 48};
    std::vector<torch::Tensor> got, want;
    for (const std::vector<int64_t>& s : {shape, shape, std::vector<int64_t>{48}, {48}}) {
      got.push_back(torch::randn(s).requires_grad_(true));
      want.push_back(got.back().detach().clone().requires_grad_(true));
    }
    const torch::Tensor d_sum = torch::randn(shape), d_norm = torch::randn(shape);
    auto [sum, normed] = add_layer_norm(got[0], got[1], got[2], got[3], 1e-5);
    const torch::Tensor ref_sum = want[0] + want[1];
    const torch::Tensor ref_norm = torch::layer_norm(ref_sum, {48}, want[2], want[3], 1e-5);
    expect_same(sum, ref_sum, 1e-6, 1e-6, "sum");
    expect_same(normed, ref_norm, 1e-5, 1e-5, "norm");
    auto loss = [&](const torch::Tensor& s, const torch::Tensor& n) {
      return uses == 0   ? (s * d_sum).sum() + (n * d_norm).sum()
             : uses == 1 ? (n * d_norm).sum()
                         : (s * d_sum).sum();
    };
    loss(sum, normed).backward();
    loss(ref_sum, ref_norm).backward();
    for (size_t t = 0; t < 4; ++t) {
      if (uses == 2 && t >= 2) continue;  // the norm unused: no gradient of its weights
      expect_same(got[t].grad(), want[t].grad(), 1e-4, 1e-5, "gradient");
    }
  }
}

TEST_P(FusedKernelTest, KeyedMasksAreTheSameAtEveryLevelAndKeepOneMinusP) {
  MaskSpec spec;
  spec.p = 0.1;
  spec.seed = 7;
  spec.key = DropoutKey{true, 3, 100};
  const torch::Tensor x = torch::empty({64, 128, 129});
  const torch::Tensor mask = keyed_mask(spec, x);
  const double kept = mask.ne(0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.9, 0.003);  // ~1M draws: the standard error is 0.0003
  simd::Level previous = simd::set_cap(simd::Level::kBaseline);
  const torch::Tensor baseline = keyed_mask(spec, x);
  simd::set_cap(previous);
  EXPECT_TRUE(torch::equal(mask, baseline));
  // A tensor-parallel slice draws the elements of the full tensor's mask.
  MaskSpec half = spec;
  half.axis = 2;
  half.parts = 3;
  half.rank = 1;
  EXPECT_TRUE(torch::equal(keyed_mask(half, torch::empty({64, 128, 43})), mask.narrow(2, 43, 43)));
  // Samples are keyed by their global index: samples 10.. of this batch are samples 0.. of a batch
  // that starts at 110.
  MaskSpec later = spec;
  later.key.sample_offset = 110;
  EXPECT_TRUE(
      torch::equal(keyed_mask(later, torch::empty({54, 128, 129})), mask.narrow(0, 10, 54)));
}

TEST(SimdDispatchTest, TheCapIsOneOfTheNamedLevels) {
  EXPECT_EQ(simd::parse_level("baseline"), simd::Level::kBaseline);
  EXPECT_EQ(simd::parse_level("avx2"), simd::Level::kAvx2);
  EXPECT_EQ(simd::parse_level("avx512"), simd::Level::kAvx512);
  EXPECT_EQ(
      error_of([] { simd::parse_level("sse9"); }),
      "environment variable SLAPO_SIMD='sse9' is not an instruction set (baseline, avx2, avx512)");
}

// Twenty steps of gpt-tiny under LibTorch's AdamW and under FusedAdamW from the same weights on
// the same batches: the same loss curve and the same weights, bit for bit (the kernel rounds each
// operation as ATen's kernels do on a CPU with FMA, which this one has at every level: the
// baseline level calls fmaf).
TEST_P(FusedKernelTest, FusedAdamWFollowsAdamW) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto reference = models::build_model(spec, 4);
  auto fused = models::build_model(spec, 4);
  reference->train();
  fused->train();
  const auto options = torch::optim::AdamWOptions(3e-3).weight_decay(0.05);
  torch::optim::AdamW slow(reference->parameters(), options);
  FusedAdamW fast(fused->parameters(), options);
  torch::manual_seed(8);
  for (int step = 0; step < 20; ++step) {
    const torch::Tensor window = torch::randint(spec.vocab, {4, 9}, torch::kLong);
    const torch::Tensor x = window.narrow(1, 0, 8), y = window.narrow(1, 1, 8);
    double losses[2];
    int k = 0;
    for (auto& [model, optimizer] :
         {std::pair<std::shared_ptr<SlotModule>*, torch::optim::Optimizer*>{&reference, &slow},
          std::pair<std::shared_ptr<SlotModule>*, torch::optim::Optimizer*>{&fused, &fast}}) {
      optimizer->zero_grad();
      DropoutScope scope(static_cast<uint64_t>(step), 0);
      torch::Tensor loss = models::language_model_loss(models::model_forward(**model, x), y);
      loss.backward();
      optimizer->step();
      losses[k++] = loss.item<double>();
    }
    EXPECT_EQ(losses[0], losses[1]) << "step " << step;
  }
  const auto a = reference->parameters(), b = fused->parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i], b[i]))
        << "parameter " << i << ": " << (a[i] != b[i]).sum().item<int64_t>()
        << " elements differ, by up to " << (a[i] - b[i]).abs().max().item<float>();
  }
  // The update did happen (the check above can fail): the weights moved from their start.
  auto start = models::build_model(spec, 4);
  EXPECT_FALSE(torch::allclose(start->parameters()[0], a[0]));
}

TEST(FusedAdamWTest, WhatTheKernelDoesNotCoverIsLibTorchsAdamW) {
  // amsgrad: delegated, so exactly AdamW.
  torch::manual_seed(1);
  const torch::Tensor start = torch::randn({5, 3});
  torch::Tensor a = start.clone().requires_grad_(true), b = start.clone().requires_grad_(true);
  const auto options = torch::optim::AdamWOptions(1e-2).amsgrad(true);
  torch::optim::AdamW slow({a}, options);
  FusedAdamW fast({b}, options);
  for (int i = 0; i < 3; ++i) {
    for (auto* t : {&a, &b}) {
      t->mutable_grad() = torch::Tensor();
      (t->pow(3).sum()).backward();
    }
    slow.step();
    fast.step();
  }
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(a, start));
}

// The fused LM head + cross-entropy against matmul + cross_entropy: the loss and the gradients of
// the hidden states, the weight and the bias, with ignored targets, at chunk sizes that divide the
// tokens, that do not, and that hold them all.
TEST(FusedLmLossTest, LossAndGradientsAreTheUnfusedOnes) {
  torch::manual_seed(2);
  const torch::Tensor h0 = torch::randn({3, 7, 16}), w0 = torch::randn({50, 16}) * 0.3,
                      b0 = torch::randn({50}) * 0.1;
  torch::Tensor targets = torch::randint(50, {3, 7}, torch::kLong);
  targets[0][2] = -100;
  targets[2][6] = -100;
  auto leaves = [&] {
    return std::vector<torch::Tensor>{h0.clone().requires_grad_(true),
                                      w0.clone().requires_grad_(true),
                                      b0.clone().requires_grad_(true)};
  };
  auto want = leaves();
  torch::Tensor logits = torch::matmul(want[0], want[1].t()) + want[2];
  torch::Tensor expected =
      torch::nn::functional::cross_entropy(logits.reshape({-1, 50}), targets.reshape({-1}));
  (expected * 3).backward();
  for (int64_t chunk : {1, 4, 21, 0}) {
    auto got = leaves();
    torch::Tensor loss = linear_cross_entropy(got[0], got[1], got[2], targets, -100, chunk);
    (loss * 3).backward();
    expect_same(loss, expected, 1e-6, 1e-6, "loss");
    expect_same(got[0].grad(), want[0].grad(), 1e-5, 1e-6, "hidden's gradient");
    expect_same(got[1].grad(), want[1].grad(), 1e-5, 1e-6, "weight's gradient");
    expect_same(got[2].grad(), want[2].grad(), 1e-5, 1e-6, "bias' gradient");
  }
  // Its gradients are handed over, not copied: a second backward through the graph is refused.
  {
    auto again = leaves();
    torch::Tensor loss = linear_cross_entropy(again[0], again[1], again[2], targets);
    loss.backward({}, /*retain_graph=*/true);
    EXPECT_NE(error_of([&] { loss.backward(); }).find("retain_graph is not supported"),
              std::string::npos);
  }
  // Without a bias, and without gradients (eval): the same loss.
  torch::NoGradGuard no_grad;
  const torch::Tensor plain = torch::nn::functional::cross_entropy(
      torch::matmul(h0, w0.t()).reshape({-1, 50}), targets.reshape({-1}));
  expect_same(linear_cross_entropy(h0, w0, torch::Tensor(), targets), plain, 1e-6, 1e-6,
              "loss without bias");
}

INSTANTIATE_TEST_SUITE_P(EveryLevel, FusedKernelTest,
                         ::testing::Values(simd::Level::kBaseline, simd::Level::kAvx2,
                                           simd::Level::kAvx512),
                         [](const auto& info) {
                           return std::string(simd::level_name(info.param));
                         });

// ---- fusion in the zoo's templates
// ----------------------------------------------------------------

struct FusionCase {
  const char* model;
  const char* knobs;
  std::vector<const char*> fused_ops;    // must appear in block 0's graph
  std::vector<const char*> removed_ops;  // must not
};

class FusionTemplateTest : public ::testing::TestWithParam<FusionCase> {};

TEST_P(FusionTemplateTest, OutputsAndGradientsAsTheOriginal) {
  const FusionCase& c = GetParam();
  const ModelPair m(c.model, 4);
  models::apply_template(*m.sch, m.spec, m.spec.family, Config::from_json(c.knobs));
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(2)), 6);
  EXPECT_TRUE(r.within(2e-5)) << r.to_string();
  // (A replaced attention has parameters of other names: fused_qkv's qkv.)
  if (std::string(c.knobs).find("attn") == std::string::npos) {
    EXPECT_TRUE(r.unmatched.empty());
  }
  const std::string block = models::blocks_path(m.spec) + ".0";
  const std::string ir = m.sch[block].print_graph();
  for (const char* op : c.fused_ops)
    EXPECT_NE(ir.find(op), std::string::npos) << op << " not in\n" << ir;
  for (const char* op : c.removed_ops)
    EXPECT_EQ(ir.find(op), std::string::npos) << op << " still in\n" << ir;
}

INSTANTIATE_TEST_SUITE_P(
    Knobs, FusionTemplateTest,
    ::testing::Values(
        FusionCase{"gpt-tiny",
                   R"({"fusion_path": "graph", "fuse_bias_gelu": true})",
                   {"slapo::bias_gelu"},
                   {"aten::gelu"}},
        FusionCase{
            "gpt-tiny",
            R"({"fusion_path": "graph", "fuse_bias_dropout_add": true, "attn": "fused_qkv"})",
            {"slapo::bias_dropout_add"},
            {}},
        FusionCase{"gpt-tiny",
                   R"({"fusion_path": "graph", "fuse_layer_norm": true})",
                   {"slapo::layer_norm"},
                   {"aten::layer_norm"}},
        FusionCase{
            "gpt-tiny",
            R"({"fusion_path": "graph", "fuse_bias_gelu": true, "fuse_bias_dropout_add": true, "fuse_layer_norm": true,
                       "ckpt_ratio": 0.5})",
            {"slapo::bias_gelu", "slapo::bias_dropout_add", "slapo::layer_norm"},
            {"aten::gelu", "aten::layer_norm"}},
        FusionCase{
            "bert-tiny",
            R"({"fusion_path": "graph", "fuse_bias_gelu": true, "fuse_bias_dropout_add": true, "fuse_layer_norm": true})",
            {"slapo::bias_gelu", "slapo::bias_dropout_add", "slapo::layer_norm"},
            {"aten::gelu", "aten::layer_norm"}},
        FusionCase{
            "mlp-tiny",
            R"({"fusion_path": "graph", "fuse_bias_dropout_add": true, "fuse_layer_norm": true})",
            {"slapo::bias_dropout_add", "slapo::layer_norm"},
            {"aten::layer_norm"}}),
    [](const auto& info) {
      return std::to_string(info.index) + "_" + std::string(info.param.model).substr(0, 3);
    });

// The eager path (fusion_path's default): modules that call the kernels, no graph; the bias +
// dropout + residual chain, which needs the block's own residual add, on a graph beside them.
struct EagerCase {
  const char* model;
  const char* knobs;
  std::vector<const char*> replaced;  // module types the schedule puts in
  bool traced;                        // a block has a graph
};

class EagerFusionTest : public ::testing::TestWithParam<EagerCase> {};

TEST_P(EagerFusionTest, OutputsAndGradientsAsTheOriginal) {
  const EagerCase& c = GetParam();
  const ModelPair m(c.model, 4);
  models::apply_template(*m.sch, m.spec, m.spec.family, Config::from_json(c.knobs));
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(2)), 6);
  EXPECT_TRUE(r.within(2e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty()) << r.to_string();  // the same parameters, by name
  const std::string text = m.sch->to_string();
  for (const char* type : c.replaced)
    EXPECT_NE(text.find(std::string(".replace(slapo::models::") + type + ")"), std::string::npos)
        << type << " not in\n"
        << text;
  EXPECT_EQ(text.find(".trace(") != std::string::npos, c.traced) << text;
}

INSTANTIATE_TEST_SUITE_P(
    Knobs, EagerFusionTest,
    ::testing::Values(
        EagerCase{"gpt-tiny", R"({"fuse_bias_gelu": true})", {"FusedMlpImpl"}, false},
        EagerCase{"gpt-tiny",
                  R"({"fuse_bias_gelu": true, "fuse_layer_norm": true, "ckpt_ratio": 0.5,
                      "attn": "memory_efficient"})",
                  {"FusedMlpImpl", "FusedLayerNormImpl", "MemoryEfficientAttentionImpl",
                   "FusedAddLayerNormImpl", "LayerNormAfterAddImpl"},
                  false},
        EagerCase{"bert-tiny",
                  R"({"fuse_layer_norm": true, "ckpt_ratio": 1.0})",
                  {"FusedAddLayerNormImpl", "LayerNormAfterAddImpl"},
                  false},
        EagerCase{
            "bert-tiny",
            R"({"fuse_bias_gelu": true, "fuse_bias_dropout_add": true, "fuse_layer_norm": true})",
            {"FusedMlpImpl", "FusedLayerNormImpl", "FusedBiasDropoutAddImpl",
             "LinearBiasLaterImpl"},
            false},
        EagerCase{"gpt-tiny",
                  R"({"fuse_bias_dropout_add": true, "fuse_bias_gelu": true, "attn": "baddbmm",
                      "ckpt_ratio": 0.5})",
                  {"FusedBiasDropoutAddImpl", "LinearBiasLaterImpl", "FusedMlpImpl",
                   "OnePassAttentionImpl"},
                  false},
        EagerCase{"mlp-tiny",
                  R"({"fuse_bias_dropout_add": true})",
                  {"FusedBiasDropoutAddImpl", "LinearBiasLaterImpl"},
                  false},
        EagerCase{"mlp-tiny",
                  R"({"fuse_bias_gelu": true, "fuse_layer_norm": true, "decompose": true})",
                  {"FusedMlpImpl", "FusedLayerNormImpl"},
                  false}),
    [](const auto& info) {
      return std::to_string(info.index) + "_" + std::string(info.param.model).substr(0, 3);
    });

// The norm after a fused add hands on what the add computed for that very sum, and computes the
// norm itself for any other tensor (another caller, a recompute that detached it): the same
// result either way, the original's parameters under their names.
TEST(FusedAddLayerNormTest, TheNormAfterTheAddComputesItselfForAnyOtherInput) {
  torch::manual_seed(3);
  torch::nn::LayerNorm original(torch::nn::LayerNormOptions({16}));
  {
    torch::NoGradGuard no_grad;
    original->weight.normal_();
    original->bias.normal_();
  }
  models::LayerNormAfterAdd norm(*original);
  models::FusedAddLayerNorm add(norm.ptr());
  EXPECT_TRUE(norm->named_parameters().contains("weight"));
  EXPECT_TRUE(norm->named_parameters()["weight"].is_same(original->weight));
  const torch::Tensor x = torch::randn({2, 5, 16}), y = torch::randn({2, 5, 16});
  const torch::Tensor want = original(x + y);
  const torch::Tensor sum = add(x, y);
  EXPECT_TRUE(torch::allclose(sum, x + y));
  EXPECT_TRUE(torch::allclose(norm(sum), want, 1e-5, 1e-5));  // handed on
  EXPECT_TRUE(torch::allclose(norm(sum), want, 1e-5, 1e-5));  // again: computed, not handed
  EXPECT_TRUE(torch::allclose(norm(sum.clone()), want, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(norm(x), original(x), 1e-5, 1e-5));
}

TEST(FuseTest, ChainsByNameAndErrors) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto sch = create_schedule(models::build_model(spec, 4));
  Schedule& mlp = sch["h.0.mlp"];
  EXPECT_NE(error_of([&] { mlp.fuse("bias_gelu"); }).find("trace() the module first"),
            std::string::npos);
  mlp["fc_in"].decompose();
  mlp.trace({torch::randn({2, 16, 32})});
  size_t matches = 0;
  mlp.fuse("bias_gelu", "native", &matches);
  EXPECT_EQ(matches, 1u);
  // The residual adds of a block are not bias adds: no bias_gelu, and no bias_dropout_add without
  // a decomposed Linear before the dropout.
  Schedule& block = sch["h.1"];
  block.trace({torch::randn({2, 16, 32})});
  block.fuse("bias_dropout_add", "native", &matches);
  EXPECT_EQ(matches, 0u);
  EXPECT_NE(
      error_of([&] {
        mlp.fuse("bias_gelu", "nnc");
      }).find("no working CPU backend: LibTorch's TensorExpr fuser has no CPU code generator here (llvm_codegen"),
      std::string::npos);
  EXPECT_NE(error_of([&] { mlp.fuse("layer_norm_gelu"); }).find("unknown chain 'layer_norm_gelu'"),
            std::string::npos);
  // Under tp, the graph path refuses every fusion; the eager one the chain on a graph, and the
  // bias + GELU of an MLP split the other way.
  for (const char* knob : {"fuse_bias_gelu", "fuse_bias_dropout_add", "fuse_layer_norm"}) {
    EXPECT_NE(error_of([&] {
                apply_gpt_template(std::string("{\"") + knob +
                                   "\": true, \"tp\": 2, \"fusion_path\": \"graph\"}");
              }).find(std::string("knob '") + knob + "': not with tp > 1 yet"),
              std::string::npos);
  }
  EXPECT_NE(error_of([&] {
              apply_gpt_template(R"({"fuse_bias_dropout_add": true, "tp": 2})");
            }).find("knob 'fuse_bias_dropout_add': not with tp > 1 yet"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { apply_gpt_template(R"({"fuse_bias_dropout_add": true, "decompose": true})"); })
          .find("knob 'fuse_bias_dropout_add': the eager fusion takes fc_out's bias from a "
                "Linear, not with decompose"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              apply_gpt_template(R"({"fuse_bias_gelu": true, "tp": 2, "mlp_shard": "row_col"})");
            }).find("knob 'fuse_bias_gelu': the eager fusion needs mlp_shard = 'col_row'"),
            std::string::npos);
}

// ---- primitives on matches
// ------------------------------------------------------------------------

TEST(MatchTest, FuseAMatchAndRefuseStaleOrForeignOnes) {
  const ModelPair m("gpt-tiny", 5);
  for (const char* block : {"h.0", "h.1"}) {
    m.sch[std::string(block) + ".mlp.fc_in"].decompose();
    m.sch[block].trace({torch::randn({2, 16, 32})});
  }
  Schedule& h0 = m.sch["h.0"];
  const std::vector<GraphMatch> found = h0.find_pattern(kAddGelu);
  ASSERT_EQ(found.size(), 1u);
  // The same occurrence, with the pattern written as C++.
  const auto add_gelu = [](const std::vector<torch::Tensor>& in) {
    return torch::gelu(in[0] + in[1]);
  };
  const std::vector<GraphMatch> from_cpp =
      h0.find_pattern(add_gelu, {torch::randn({2, 8}), torch::randn({8})});
  ASSERT_EQ(from_cpp.size(), 1u);
  EXPECT_EQ(from_cpp[0].kinds, found[0].kinds);
  EXPECT_EQ(found[0].kinds, (std::vector<std::string>{"aten::add", "aten::gelu"}));
  const std::vector<GraphMatch> gelu_only =
      h0.find_pattern("graph(%x, %a):\n  %y = aten::gelu(%x, %a)\n  return (%y)");
  EXPECT_NE(error_of([&] {
              h0.fuse(gelu_only[0]);
            }).find("is not a chain the native compiler has a kernel for"),
            std::string::npos);
  const GraphMatch foreign = m.sch["h.1"].find_pattern(kAddGelu).at(0);
  EXPECT_NE(error_of([&] { h0.fuse(foreign); }).find("was found in another module"),
            std::string::npos);
  h0.fuse(found[0]);
  EXPECT_NE(h0.print_graph().find("slapo::bias_gelu"), std::string::npos);
  EXPECT_NE(error_of([&] { h0.fuse(gelu_only[0]); }).find("stale match 0 of 'h.0' (aten::gelu)"),
            std::string::npos);
  EXPECT_TRUE(h0.find_pattern(kAddGelu).empty());
  // The same math, in this shape and in a shape traced later.
  EXPECT_TRUE(verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(4)), 12).within(1e-5));
  EXPECT_TRUE(verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(5, 3, 8)), 13).within(1e-5));
  EXPECT_NE(m.sch->to_string().find(
                "sch[\"h.0\"].fuse_match(\"\\ngraph(%x, %b, %alpha, %approximate):\\n"),
            std::string::npos)
      << m.sch->to_string();
}

// gelu(x + b) · scale, in eager C++: what replaces the matched add + GELU.
class ScaledBiasGeluImpl : public torch::nn::Module {
 public:
  ScaledBiasGeluImpl() { scale = register_parameter("scale", torch::ones({1})); }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& b) {
    return torch::gelu(x + b) * scale;
  }
  torch::Tensor scale;
};
TORCH_MODULE(ScaledBiasGelu);

TEST(MatchTest, ReplaceASubgraphByAModule) {
  const ModelPair m("gpt-tiny", 6);
  m.sch["h.0.mlp.fc_in"].decompose();
  Schedule& mlp = m.sch["h.0.mlp"];
  mlp.trace({torch::randn({2, 16, 32})});
  const GraphMatch match = mlp.find_pattern(kAddGelu).at(0);
  EXPECT_NE(error_of([&] {
              mlp.replace(match, torch::nn::Linear(4, 4));
            }).find("takes 1 tensors but match 0"),
            std::string::npos);
  // Refused before anything changed: no new slot, the match still current.
  EXPECT_FALSE(std::dynamic_pointer_cast<SlotModule>(mlp.module())->has_slot("subgraph_0"));
  mlp.replace(match, ScaledBiasGelu());
  EXPECT_NE(mlp.print_graph().find("slapo::call"), std::string::npos) << mlp.print_graph();
  EXPECT_EQ(mlp.print_graph().find("aten::gelu"), std::string::npos);
  // The module is part of the model (its parameter is trained) and of the schedule.
  EXPECT_NO_THROW(m.sch["h.0.mlp.subgraph_0"]);
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(6)), 14);
  EXPECT_LT(r.max_grad_diff(), 1e-5) << r.to_string();
  EXPECT_EQ(r.unmatched, std::vector<std::string>{"h.0.mlp.subgraph_0.scale (scheduled only)"});
  torch::Tensor scale = m.scheduled->named_parameters()["h.0.mlp.subgraph_0.scale"];
  ASSERT_TRUE(scale.grad().defined());
  EXPECT_GT(scale.grad().abs().item<float>(), 0);
  EXPECT_NE(error_of([&] {
              replay(*create_schedule(models::build_model(m.spec, 6)),
                     parse_schedule_text(m.sch->to_string()));
            }).find("cannot be replayed from text"),
            std::string::npos);
}

TEST(MatchTest, CheckpointASubgraphAndReplayIt) {
  const ModelPair m("gpt-tiny", 9);
  Schedule& block = m.sch["h.0"];
  block.trace({torch::randn({2, 16, 32})});
  // The attention's scores, softmax and dropout: recomputed in backward with the same mask.
  const char* const kSoftmaxDropout = R"(
graph(%s, %dim, %dtype, %p, %seed, %axis, %parts, %rank, %ind):
  %a = aten::softmax(%s, %dim, %dtype)
  %d = slapo::keyed_dropout(%a, %p, %seed, %axis, %parts, %rank, %ind)
  return (%d))";
  const std::vector<GraphMatch> found = block.find_pattern(kSoftmaxDropout);
  ASSERT_EQ(found.size(), 1u);
  block.checkpoint(found[0]);
  EXPECT_NE(block.print_graph().find("slapo::call"), std::string::npos);
  EXPECT_EQ(block.print_graph().find("aten::softmax"), std::string::npos);
  const VerifyReport r = verify(*m.original, *m.scheduled, zoo_run(tiny_tokens(7)), 15);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_NE(error_of([&] { block.checkpoint(found[0]); }).find("stale"), std::string::npos);

  // From its text, onto a module traced by need: found again when the graph is traced.
  auto replayed_model = models::build_model(m.spec, 9);
  auto replayed = create_schedule(replayed_model);
  replay(*replayed, parse_schedule_text(m.sch->to_string()));
  EXPECT_EQ(replayed->to_string(), m.sch->to_string());
  const VerifyReport again = verify(*m.original, *replayed_model, zoo_run(tiny_tokens(7)), 15);
  EXPECT_TRUE(again.within(1e-5)) << again.to_string();
  EXPECT_NE((*replayed)["h.0"].print_graph().find("slapo::call"), std::string::npos);
}

}  // namespace
}  // namespace slapo::schedule
