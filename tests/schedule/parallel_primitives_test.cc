// The parallel side of the schedule language within one process: sync's checks against the
// shards, keyed dropout, the pipeline runtime as gradient accumulation, bucketed gradient
// averaging. Across processes: tests/dist.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/error.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "schedule/build.h"
#include "schedule/data_parallel.h"
#include "schedule/decomposed_linear.h"
#include "schedule/fused_bias_gelu.h"
#include "schedule/keyed_dropout.h"
#include "schedule/pipeline.h"
#include "schedule/replay.h"
#include "schedule/schedule.h"
#include "schedule/verify.h"

namespace slapo::schedule {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void cuts_of_config(const std::string& json) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto sch = create_schedule(models::build_model(spec, 0));
  models::apply_template(*sch, spec, "gpt", Config::from_json(json));
}

std::unique_ptr<Schedule> planned(int64_t tp) {
  ScheduleOptions o;
  o.tp_size = tp;
  return create_schedule(models::build_model(models::model_preset("gpt-tiny"), 1), o);
}

TEST(SyncTest, CollectivesMustMatchTheShards) {
  auto sch = planned(2);
  Schedule& fc_in = (*sch)["h.0.mlp.fc_in"];
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "all_reduce"); }).find("nothing at or below 'h.0.mlp.fc_in' is sharded"),
            std::string::npos);
  fc_in.shard("weight", 0).shard("bias", 0);
  // Split by outputs: the output is split along its last axis, not partial sums.
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "all_reduce"); })
                .find("needs 'weight' sharded along axis 1 (partial sums to reduce), but it is sharded along axis 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "all_gather", 1); }).find("split along its last axis (-1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("bwd_post", "all_gather", -1); }).find("bwd_post takes all_reduce or reduce_scatter"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "split", -1); }).find("split only applies to the inputs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_mid", "all_reduce"); }).find("unknown mode 'fwd_mid'"), std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "all_to_all"); }).find("unknown op 'all_to_all'"), std::string::npos);
  fc_in.sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
  Schedule& fc_out = (*sch)["h.0.mlp.fc_out"];
  fc_out.shard("weight", 1);
  EXPECT_NE(error_of([&] { fc_out.sync("fwd_post", "all_gather", -1); }).find("needs 'weight' sharded along axis 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_out.sync("fwd_pre", "split", 0); }).find("needs 'weight' sharded along axis 1 (its inputs) and axis -1"),
            std::string::npos);
  fc_out.sync("fwd_post", "all_reduce");
  const ScheduleRecord& r = sch->record();
  ASSERT_EQ(r.syncs.size(), 3u);
  EXPECT_EQ(r.syncs[2].path, "h.0.mlp.fc_out");
  EXPECT_NE(sch->to_string().find("sch[\"h.0.mlp.fc_in\"].sync(\"fwd_post\", \"all_gather\", -1)"), std::string::npos);
  EXPECT_NE(build(*sch).plan_text().find("synced: h.0.mlp.fc_in fwd_post all_gather"), std::string::npos);
}

TEST(SyncTest, AGroupOfOneRunsTheScheduleWithTheSameMath) {
  // With a real (one-rank) group every sync runs; the result must be the original's.
  auto original = models::build_model(models::model_preset("gpt-tiny"), 4);
  auto scheduled = models::build_model(models::model_preset("gpt-tiny"), 4);
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(scheduled, o);
  auto& fc_out = (*sch)["h.0.mlp.fc_out"];
  fc_out.shard("weight", 1).sync("fwd_post", "all_reduce");  // the bias is added after the reduce
  torch::Tensor tokens = torch::randint(128, {2, 8}, torch::kLong);
  DropoutScope scope(0, 0);
  torch::Tensor a = models::model_forward(*original, tokens), b = models::model_forward(*scheduled, tokens);
  EXPECT_TRUE(torch::allclose(a, b, 1e-6, 1e-6));
}

TEST(KeyedDropoutTest, MasksDependOnStepAndSampleOnly) {
  KeyedDropout drop(0.5, 42);
  drop->train();
  const torch::Tensor x = torch::ones({4, 3, 6});
  torch::Tensor full;
  {
    DropoutScope scope(7, 100);
    full = drop(x);
  }
  // The same samples in two micro-batches, in any order: the same masks.
  torch::Tensor second, first;
  {
    DropoutScope scope(7, 102);
    second = drop(x.narrow(0, 2, 2));
  }
  {
    DropoutScope scope(7, 100);
    first = drop(x.narrow(0, 0, 2));
  }
  EXPECT_TRUE(torch::equal(torch::cat({first, second}), full));
  // Another step, another mask; some elements kept, some dropped, kept ones scaled by 1/(1-p).
  {
    DropoutScope other(8, 100);
    EXPECT_FALSE(torch::equal(drop(x), full));
  }
  EXPECT_GT(full.eq(0).sum().item<int64_t>(), 0);
  EXPECT_GT(full.eq(2).sum().item<int64_t>(), 0);
  EXPECT_EQ(full.eq(0).sum().item<int64_t>() + full.eq(2).sum().item<int64_t>(), full.numel());
  // Outside a scope, every forward is a fresh step.
  KeyedDropout loose(0.5, 42);
  loose->train();
  EXPECT_FALSE(current_dropout_key().active);
  EXPECT_FALSE(torch::equal(loose(x), loose(x)));
  loose->eval();
  EXPECT_TRUE(torch::equal(loose(x), x));
}

TEST(KeyedDropoutTest, AShardDrawsItsSliceOfTheFullMask) {
  const torch::Tensor x = torch::ones({2, 4, 3});
  KeyedDropout whole(0.3, 9), half(0.3, 9), independent(0.3, 9);
  half->shard_mask(1, 2, 1);
  independent->shard_mask(1, 2, 1, /*independent=*/true);
  DropoutScope scope(1, 0);
  const torch::Tensor full = whole(x);
  EXPECT_TRUE(torch::equal(half(x.narrow(1, 2, 2)), full.narrow(1, 2, 2)));
  EXPECT_FALSE(torch::equal(independent(x.narrow(1, 2, 2)), full.narrow(1, 2, 2)));
  EXPECT_NE(error_of([&] { half->shard_mask(0, 2, 0); }).find("axis 0 is the batch"), std::string::npos);
  // fork_rng on a sharded mask: this rank's own stream, like independent (same seed, same masks).
  KeyedDropout forked(0.3, 9);
  forked->shard_mask(1, 2, 1);
  forked->fork(9);
  EXPECT_TRUE(torch::equal(forked(x.narrow(1, 2, 2)), independent(x.narrow(1, 2, 2))));
}

TEST(PipelineTest, MicroBatchesAccumulateTheFullBatchGradient) {
  auto grads = [](int64_t micro_batches, const char* schedule) {
    auto model = models::build_model(models::model_preset("gpt-tiny"), 2);
    auto sch = create_schedule(model);
    (*sch)["h.0"].cut_pipeline_stage().checkpoint();
    const StagePlan plan = plan_stages(*model, build(*sch).plan.cuts);
    EXPECT_EQ(plan.stages, 2);
    PipelineRunner runner(model, plan, nullptr, {micro_batches, parse_pipeline_schedule(schedule)});
    torch::manual_seed(1);
    torch::Tensor tokens = torch::randint(128, {8, 17}, torch::kLong);
    model->train();
    const double loss = runner.run(tokens.narrow(1, 0, 16), tokens.narrow(1, 1, 16), models::language_model_loss, 3, 0);
    std::vector<torch::Tensor> out = {torch::tensor(loss)};
    for (const auto& p : unique_parameters(*model)) out.push_back(p.grad().clone());
    return out;
  };
  const auto one = grads(1, "1f1b"), four = grads(4, "1f1b"), gpipe = grads(4, "gpipe");
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(torch::allclose(one[i].to(torch::kDouble), four[i].to(torch::kDouble), 1e-5, 1e-7)) << "tensor " << i;
    EXPECT_TRUE(torch::equal(four[i], gpipe[i])) << "tensor " << i;
  }
  auto model = models::build_model(models::model_preset("gpt-tiny"), 2);
  EXPECT_NE(error_of([&] { plan_stages(*model, {"h.0.mlp"}); }).find("is not between the blocks of 'h'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { parse_pipeline_schedule("zb"); }).find("not one of: gpipe, 1f1b"), std::string::npos);
  EXPECT_NE(error_of([&] {
              PipelineRunner r(model, plan_stages(*model, {"h.0"}), nullptr, {3, PipelineSchedule::kGPipe});
              torch::Tensor t = torch::zeros({8, 4}, torch::kLong);
              r.run(t, t, models::language_model_loss, 0, 0);
            }).find("does not split into 3 micro-batches"),
            std::string::npos);
}

// A group whose other member always holds the same values: sums double, nothing else changes.
class MirrorGroup : public LocalCommunicator {
 public:
  MirrorGroup() : LocalCommunicator("mirror") {}
  int size() const override { return 2; }
  void all_reduce(at::Tensor& t, ReduceOp) override {
    t.mul_(2);
    ++calls;
  }
  int calls = 0;
};

TEST(DataParallelTest, GradientsAreAveragedInBuckets) {
  std::vector<torch::Tensor> params;
  for (int i = 0; i < 5; ++i) {
    params.push_back(torch::zeros({256}, torch::requires_grad()));  // 1 KiB each
    params.back().mutable_grad() = torch::full({256}, static_cast<float>(i));
  }
  params.push_back(torch::zeros({3}, torch::requires_grad()));  // no gradient: counts as zeros
  MirrorGroup group;
  average_gradients(params, group, /*bucket_bytes=*/2048);
  EXPECT_EQ(group.calls, 3);  // [0, 1], [2, 3], [4, 5]
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(torch::equal(params[i].grad(), torch::full({256}, static_cast<float>(i))));
  EXPECT_TRUE(torch::equal(params[5].grad(), torch::zeros({3})));
  sum_gradients(params, group, 1 << 20);
  EXPECT_EQ(group.calls, 4);
  EXPECT_TRUE(torch::equal(params[1].grad(), torch::full({256}, 2.0f)));
}

TEST(TemplateTest, PipelineCutsComeFromTheKnobOrAreEven) {
  const models::ModelSpec spec = models::model_preset("gpt-mini");  // 6 blocks, 8 heads
  auto cuts_of = [&](const std::string& json) {
    auto sch = create_schedule(models::build_model(spec, 0));
    models::apply_template(*sch, spec, "gpt", Config::from_json(json));
    return build(*sch).plan.cuts;
  };
  EXPECT_EQ(cuts_of(R"({"pp": 2})"), std::vector<std::string>{"h.2"});  // stage 2 begins at block 3
  EXPECT_EQ(cuts_of(R"({"pp": 2, "cuts": [4]})"), std::vector<std::string>{"h.3"});
  EXPECT_EQ(cuts_of(R"({"pp": 3})"), (std::vector<std::string>{"h.1", "h.3"}));
  EXPECT_NE(error_of([&] { cuts_of(R"({"pp": 2, "cuts": [0]})"); }).find("must increase within blocks 1..5"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of(R"({"pp": 3, "cuts": [2]})"); }).find("1 cuts for pp = 3 stages (needs 2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of(R"({"pp": 7})"); }).find("knob 'pp': 7 stages for 6 blocks"), std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of(R"({"tp": 3})"); }).find("knob 'tp': 3 does not divide heads = 8"), std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of(R"({"mlp_shard": "diagonal"})"); }).find("'diagonal' is not a layout (col_row, row_col)"),
            std::string::npos);
  // A schedule with a real group must match the configuration's tp.
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(models::build_model(spec, 0), o);
  EXPECT_NE(error_of([&] { models::apply_template(*sch, spec, "gpt", Config::from_json(R"({"tp": 2})")); })
                .find("knob 'tp' = 2 but this schedule's tensor-parallel group has 1 rank(s)"),
            std::string::npos);
}

TEST(DecomposeTest, SameParametersSameMathAndBeforeShardOnly) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto original = models::build_model(spec, 3);
  auto scheduled = models::build_model(spec, 3);
  auto sch = create_schedule(scheduled);
  models::apply_template(*sch, spec, "gpt", Config::from_json(R"({"decompose": true, "ckpt_ratio": 0.5})"));
  (*sch)["h.0.attn.q_proj"].decompose();
  EXPECT_NE(std::dynamic_pointer_cast<DecomposedLinearImpl>((*sch)["h.1.mlp.fc_out"].module()), nullptr);
  EXPECT_NE(sch->to_string().find("sch[\"h.1.mlp.fc_in\"].decompose()"), std::string::npos) << sch->to_string();
  torch::manual_seed(0);
  const torch::Tensor tokens = torch::randint(128, {2, 16}, torch::kLong);
  auto run = [&](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), tokens);
    return std::make_pair(logits, models::language_model_loss(logits, tokens));
  };
  const VerifyReport r = verify(*original, *scheduled, run, 5);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());  // same parameter names
  // Replays from its text.
  auto fresh = create_schedule(models::build_model(spec, 3));
  replay(*fresh, parse_schedule_text(sch->to_string()), models::replace_with_zoo_module);
  EXPECT_EQ(fresh->to_string(), sch->to_string());
  // Misuse.
  auto planned2 = planned(2);
  (*planned2)["h.0.mlp.fc_in"].shard("weight", 0);
  EXPECT_NE(error_of([&] { (*planned2)["h.0.mlp.fc_in"].decompose(); })
                .find("decompose on 'h.0.mlp.fc_in': must come before shard, but 'weight' is already sharded"),
            std::string::npos);
  EXPECT_NE(error_of([&] { (*planned2)["h.0.ln_1"].decompose(); }).find("only an nn::Linear can be decomposed"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of_config(R"({"decompose": 1})"); }).find("knob 'decompose': expected true or false"),
            std::string::npos);
}

// ---- static graph ----------------------------------------------------------------------------

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

class HolderImpl : public SlotModule {
 public:
  HolderImpl() { add_slot("inner", Branchy()); }
  torch::Tensor forward(const torch::Tensor& x) { return call("inner", x); }
};

TEST(TraceTest, TracedModulesRunInPlaceWithTheSameMath) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto original = models::build_model(spec, 7);
  auto scheduled = models::build_model(spec, 7);
  auto sch = create_schedule(scheduled);
  scheduled->train();
  (*sch)["h.0"].trace({torch::randn({2, 16, 32})});
  (*sch)["h.1.mlp.fc_in"].decompose();
  (*sch)["h.1.mlp"].trace();  // by need
  const std::string ir = (*sch)["h.0"].print_graph();
  EXPECT_NE(ir.find("aten::gelu"), std::string::npos) << ir;
  EXPECT_NE(ir.find("slapo::keyed_dropout"), std::string::npos) << ir;  // dropout stays keyed
  EXPECT_NE(sch->to_string().find("sch[\"h.0\"].trace()"), std::string::npos);
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(128, {2, 16}, torch::kLong);
  auto run = [&](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), tokens);
    return std::make_pair(logits, models::language_model_loss(logits, tokens));
  };
  const VerifyReport r = verify(*original, *scheduled, run, 9);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());
  EXPECT_GT(r.grads.size(), 20u);
  // Another shape: traced again, still right.
  const torch::Tensor other = torch::randint(128, {3, 8}, torch::kLong);
  auto run_other = [&](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), other);
    return std::make_pair(logits, models::language_model_loss(logits, other));
  };
  EXPECT_TRUE(verify(*original, *scheduled, run_other, 10).within(1e-5));
  EXPECT_NE((*sch)["h.1.mlp"].print_graph().find("aten::matmul"), std::string::npos);
}

TEST(TraceTest, FindByPathAndByPattern) {
  auto sch = create_schedule(models::build_model(models::model_preset("gpt-tiny"), 1));
  EXPECT_EQ(sch->find(R"(h\.\d+\.mlp\.fc_(in|out))"),
            (std::vector<std::string>{"h.0.mlp.fc_in", "h.0.mlp.fc_out", "h.1.mlp.fc_in", "h.1.mlp.fc_out"}));
  EXPECT_TRUE((*sch)["h.0"].find("nothing.*").empty());
  EXPECT_NE(error_of([&] { sch->find("(("); }).find("is not a regular expression"), std::string::npos);
  Schedule& mlp = (*sch)["h.0.mlp"];
  EXPECT_NE(error_of([&] { mlp.find_pattern("graph(%x):\n  return (%x)"); }).find("needs a traced graph"),
            std::string::npos);
  mlp.trace({torch::randn({2, 16, 32})});
  const auto gelu = mlp.find_pattern(R"(
graph(%x, %approximate):
  %y = aten::gelu(%x, %approximate)
  return (%y))");
  ASSERT_EQ(gelu.size(), 1u);
  EXPECT_EQ(gelu[0], std::vector<std::string>{"aten::gelu"});
  EXPECT_TRUE(mlp.find_pattern("graph(%x, %dim, %dtype):\n  %y = aten::softmax(%x, %dim, %dtype)\n  return (%y)").empty());
  EXPECT_NE(error_of([&] { mlp.find_pattern("graph(%x):\n  %y = aten::gelu(%x\n"); }).find("malformed pattern"),
            std::string::npos);
}

TEST(TraceTest, AForwardThatReadsValuesIsRefused) {
  // Seeded: the weights, the example and the check's random inputs are the same every run.
  for (uint64_t seed = 0; seed < 4; ++seed) {
    torch::manual_seed(seed);
    auto sch = create_schedule(std::make_shared<HolderImpl>());
    const std::string error = error_of([&] { (*sch)["inner"].trace({torch::randn({2, 4})}); });
    EXPECT_NE(error.find("cannot trace 'inner'"), std::string::npos) << "seed " << seed << ": " << error;
  }
  auto sch = create_schedule(std::make_shared<HolderImpl>());
  (*sch)["inner"].checkpoint();
  EXPECT_NE(error_of([&] { (*sch)["inner"].trace(); }).find("it is checkpointed"), std::string::npos);
}

TEST(FusedKernelTest, BiasGeluMatchesATenForwardAndBackward) {
  torch::manual_seed(3);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{4, 16, 64}, std::vector<int64_t>{7, 33}}) {
    torch::Tensor x = (torch::randn(shape) * 3).requires_grad_(true);
    torch::Tensor b = torch::randn({shape.back()}).requires_grad_(true);
    torch::Tensor x2 = x.detach().clone().requires_grad_(true), b2 = b.detach().clone().requires_grad_(true);
    torch::Tensor dy = torch::randn(shape);
    torch::Tensor fused = bias_gelu(x, b);
    torch::Tensor reference = torch::gelu(x2 + b2);
    EXPECT_TRUE(torch::allclose(fused, reference, 1e-5, 1e-6)) << (fused - reference).abs().max().item<float>();
    fused.backward(dy);
    reference.backward(dy);
    EXPECT_TRUE(torch::allclose(x.grad(), x2.grad(), 1e-5, 1e-5)) << (x.grad() - x2.grad()).abs().max().item<float>();
    EXPECT_TRUE(torch::allclose(b.grad(), b2.grad(), 1e-4, 1e-4)) << (b.grad() - b2.grad()).abs().max().item<float>();
  }
  // Far tails: no NaN or inf from the exponent tricks.
  const torch::Tensor tails = bias_gelu(torch::tensor({-200.0f, -30.0f, 0.0f, 30.0f, 200.0f}).unsqueeze(0), torch::zeros({5}));
  EXPECT_TRUE(torch::allclose(tails, torch::gelu(torch::tensor({-200.0f, -30.0f, 0.0f, 30.0f, 200.0f}).unsqueeze(0))));
  EXPECT_NE(error_of([&] { bias_gelu(torch::ones({2, 3}), torch::ones({4})); }).find("does not match the last axis"),
            std::string::npos);
}

TEST(FuseTest, BiasGeluFusedInTheTracedGraphWithTheSameMath) {
  const models::ModelSpec spec = models::model_preset("gpt-tiny");
  auto original = models::build_model(spec, 4);
  auto scheduled = models::build_model(spec, 4);
  auto sch = create_schedule(scheduled);
  models::apply_template(*sch, spec, "gpt", Config::from_json(R"({"fuse_bias_gelu": true, "ckpt_ratio": 0.5})"));
  EXPECT_NE(sch->to_string().find("sch[\"h.1.mlp\"].fuse(\"bias_gelu\", \"native\")"), std::string::npos)
      << sch->to_string();
  torch::manual_seed(2);
  const torch::Tensor tokens = torch::randint(128, {2, 16}, torch::kLong);
  auto run = [&](torch::nn::Module& m) {
    torch::Tensor logits = models::model_forward(dynamic_cast<SlotModule&>(m), tokens);
    return std::make_pair(logits, models::language_model_loss(logits, tokens));
  };
  const VerifyReport r = verify(*original, *scheduled, run, 6);
  EXPECT_TRUE(r.within(1e-5)) << r.to_string();
  EXPECT_TRUE(r.unmatched.empty());
  const std::string ir = (*sch)["h.0.mlp"].print_graph();
  EXPECT_NE(ir.find("slapo::bias_gelu"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("aten::gelu"), std::string::npos) << ir;

  // Matches are counted on the graphs traced so far; errors name what is wrong.
  auto other = create_schedule(models::build_model(spec, 4));
  Schedule& mlp = (*other)["h.0.mlp"];
  EXPECT_NE(error_of([&] { mlp.fuse("bias_gelu"); }).find("trace() the module first"), std::string::npos);
  mlp["fc_in"].decompose();
  mlp.trace({torch::randn({2, 16, 32})});
  size_t matches = 0;
  mlp.fuse("bias_gelu", "native", &matches);
  EXPECT_EQ(matches, 1u);
  EXPECT_NE(error_of([&] { mlp.fuse("bias_gelu", "nnc"); }).find("no working CPU backend"), std::string::npos);
  EXPECT_NE(error_of([&] { mlp.fuse("layer_norm_gelu"); }).find("unknown chain 'layer_norm_gelu'"), std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of_config(R"({"fuse_bias_gelu": true, "tp": 2})"); }).find("not with tp > 1 yet"),
            std::string::npos);
}

}  // namespace
}  // namespace slapo::schedule
