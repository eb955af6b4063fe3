// The parallel side of the schedule language within one process: sync's checks against the
// shards, keyed dropout, the pipeline runtime as gradient accumulation, bucketed gradient
// averaging. Across processes: tests/dist.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/error.h"
#include "error_of.h"
#include "models/pipeline_cuts.h"
#include "models/template_knobs.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "schedule/language/build.h"
#include "schedule/language/decomposed_linear.h"
#include "schedule/language/replay.h"
#include "schedule/language/schedule.h"
#include "schedule/language/verify.h"
#include "schedule/runtime/data_parallel.h"
#include "schedule/runtime/keyed_dropout.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::schedule {
namespace {

ScheduleHandle planned(int64_t tp) {
  ScheduleOptions o;
  o.tp_size = tp;
  return create_schedule(models::build_model(models::model_preset("gpt-tiny"), 1), o);
}

TEST(SyncTest, CollectivesMustMatchTheShards) {
  auto sch = planned(2);
  Schedule& fc_in = sch["h.0.mlp.fc_in"];
  EXPECT_NE(error_of([&] {
              fc_in.sync("fwd_post", "all_reduce");
            }).find("nothing at or below 'h.0.mlp.fc_in' is sharded"),
            std::string::npos);
  fc_in.shard("weight", 0).shard("bias", 0);
  // Split by outputs: the output is split along its last axis, not partial sums.
  EXPECT_NE(
      error_of([&] {
        fc_in.sync("fwd_post", "all_reduce");
      }).find("needs 'weight' sharded along axis 1 (partial sums to reduce), but it is sharded along axis 0"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              fc_in.sync("fwd_post", "all_gather", 1);
            }).find("split along its last axis (-1)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fc_in.sync("bwd_post", "all_gather", -1);
            }).find("bwd_post takes all_reduce or reduce_scatter"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fc_in.sync("fwd_post", "split", -1);
            }).find("split only applies to the inputs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_mid", "all_reduce"); }).find("unknown mode 'fwd_mid'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fc_in.sync("fwd_post", "all_to_all"); }).find("unknown op 'all_to_all'"),
            std::string::npos);
  fc_in.sync("fwd_post", "all_gather", -1).sync("bwd_post", "all_reduce");
  Schedule& fc_out = sch["h.0.mlp.fc_out"];
  fc_out.shard("weight", 1);
  EXPECT_NE(error_of([&] {
              fc_out.sync("fwd_post", "all_gather", -1);
            }).find("needs 'weight' sharded along axis 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              fc_out.sync("fwd_pre", "split", 0);
            }).find("needs 'weight' sharded along axis 1 (its inputs) and axis -1"),
            std::string::npos);
  fc_out.sync("fwd_post", "all_reduce");
  const ScheduleRecord& r = sch->record();
  ASSERT_EQ(r.syncs.size(), 3u);
  EXPECT_EQ(r.syncs[2].path, "h.0.mlp.fc_out");
  EXPECT_NE(sch->to_string().find("sch[\"h.0.mlp.fc_in\"].sync(\"fwd_post\", \"all_gather\", -1)"),
            std::string::npos);
  EXPECT_NE(build(*sch).plan_text().find("synced: h.0.mlp.fc_in fwd_post all_gather"),
            std::string::npos);
}

TEST(SyncTest, AGroupOfOneRunsTheScheduleWithTheSameMath) {
  // With a real (one-rank) group every sync runs; the result must be the original's.
  auto original = models::build_model(models::model_preset("gpt-tiny"), 4);
  auto scheduled = models::build_model(models::model_preset("gpt-tiny"), 4);
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(scheduled, o);
  auto& fc_out = sch["h.0.mlp.fc_out"];
  fc_out.shard("weight", 1).sync("fwd_post", "all_reduce");  // the bias is added after the reduce
  torch::Tensor tokens = torch::randint(128, {2, 8}, torch::kLong);
  DropoutScope scope(0, 0);
  torch::Tensor a = models::model_forward(*original, tokens),
                b = models::model_forward(*scheduled, tokens);
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
  EXPECT_NE(error_of([&] { half->shard_mask(0, 2, 0); }).find("axis 0 is the batch"),
            std::string::npos);
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
    sch["h.0"].cut_pipeline_stage().checkpoint();
    const StagePlan plan = plan_stages(*model, build(*sch).plan.cuts);
    EXPECT_EQ(plan.stages, 2);
    PipelineRunner runner(model, plan, nullptr, {micro_batches, parse_pipeline_schedule(schedule)});
    torch::manual_seed(1);
    torch::Tensor tokens = torch::randint(128, {8, 17}, torch::kLong);
    model->train();
    const double loss = runner.run(tokens.narrow(1, 0, 16), tokens.narrow(1, 1, 16),
                                   models::language_model_loss, 3, 0);
    std::vector<torch::Tensor> out = {torch::tensor(loss)};
    for (const auto& p : unique_parameters(*model)) out.push_back(p.grad().clone());
    return out;
  };
  const auto one = grads(1, "1f1b"), four = grads(4, "1f1b"), gpipe = grads(4, "gpipe");
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_TRUE(torch::allclose(one[i].to(torch::kDouble), four[i].to(torch::kDouble), 1e-5, 1e-7))
        << "tensor " << i;
    EXPECT_TRUE(torch::equal(four[i], gpipe[i])) << "tensor " << i;
  }
  auto model = models::build_model(models::model_preset("gpt-tiny"), 2);
  EXPECT_NE(
      error_of([&] { plan_stages(*model, {"h.0.mlp"}); }).find("is not between the blocks of 'h'"),
      std::string::npos);
  EXPECT_NE(error_of([&] { parse_pipeline_schedule("zb"); }).find("not one of: gpipe, 1f1b"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              PipelineRunner r(model, plan_stages(*model, {"h.0"}), nullptr,
                               {3, PipelineSchedule::kGPipe});
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
  for (int i = 0; i < 5; ++i)
    EXPECT_TRUE(torch::equal(params[i].grad(), torch::full({256}, static_cast<float>(i))));
  EXPECT_TRUE(torch::equal(params[5].grad(), torch::zeros({3})));
  sum_gradients(params, group, 1 << 20);
  EXPECT_EQ(group.calls, 4);
  EXPECT_TRUE(torch::equal(params[1].grad(), torch::full({256}, 2.0f)));
}

TEST(PipelineCutsTest, TheSlowestStageIsAsFastAsItCanBe) {
  const models::ModelSpec gpt =
      models::model_preset("gpt-mini");  // 6 blocks; the head: 2.29 blocks
  EXPECT_NEAR(gpt.head_forward_flops(gpt.max_seq) / gpt.block_forward_flops(gpt.max_seq), 2.286,
              1e-3);
  EXPECT_NEAR(gpt.forward_flops(64), 6 * gpt.block_forward_flops(64) + gpt.head_forward_flops(64),
              1.0);
  EXPECT_TRUE(models::balanced_cuts(gpt, 1).empty());
  EXPECT_EQ(models::balanced_cuts(gpt, 2), std::vector<int64_t>{4});  // 4 | 2 + 2.29
  EXPECT_EQ(models::balanced_cuts(gpt, 3),
            (std::vector<int64_t>{2, 5}));  // 2 | 3 | 1 + 2.29 (3 | 2 | ... ties)
  EXPECT_EQ(models::balanced_cuts(gpt, 6), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  // Without a head worth counting, the split is even.
  models::ModelSpec headless = models::model_preset("mlp-mini");  // 8 blocks
  headless.vocab = 1;
  EXPECT_EQ(models::balanced_cuts(headless, 4), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(models::balanced_cuts(models::model_preset("mlp-mini"), 2),
            std::vector<int64_t>{5});  // head: 2 blocks
  EXPECT_THROW(models::balanced_cuts(gpt, 7), Error);
}

TEST(TemplateTest, PipelineCutsComeFromTheKnobOrAreBalanced) {
  const models::ModelSpec spec = models::model_preset("gpt-mini");  // 6 blocks, 8 heads
  auto cuts_of = [&](const std::string& json) {
    auto sch = create_schedule(models::build_model(spec, 0));
    models::apply_template(*sch, spec, "gpt", Config::from_json(json));
    return build(*sch).plan.cuts;
  };
  // The LM head weighs 2.3 blocks: stage 2 begins at block 4 (4 | 2 + head), not 3.
  EXPECT_EQ(cuts_of(R"({"pp": 2})"), std::vector<std::string>{"h.3"});
  EXPECT_EQ(cuts_of(R"({"pp": 2, "cuts": [4]})"), std::vector<std::string>{"h.3"});
  EXPECT_EQ(cuts_of(R"({"pp": 3})"), (std::vector<std::string>{"h.1", "h.4"}));  // 2 | 3 | 1 + head
  EXPECT_NE(error_of([&] {
              cuts_of(R"({"pp": 2, "cuts": [0]})");
            }).find("must increase within blocks 1..5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              cuts_of(R"({"pp": 3, "cuts": [2]})");
            }).find("1 cuts for pp = 3 stages (needs 2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { cuts_of(R"({"pp": 7})"); }).find("knob 'pp': 7 stages for 6 blocks"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { cuts_of(R"({"tp": 3})"); }).find("knob 'tp': 3 does not divide heads = 8"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              cuts_of(R"({"mlp_shard": "diagonal"})");
            }).find("knob 'mlp_shard': 'diagonal' is not one of col_row, row_col"),
            std::string::npos);
  // A schedule with a real group must match the configuration's tp.
  ScheduleOptions o;
  o.tp_group = std::make_shared<LocalCommunicator>("tp");
  auto sch = create_schedule(models::build_model(spec, 0), o);
  EXPECT_NE(error_of([&] {
              models::apply_template(*sch, spec, "gpt", Config::from_json(R"({"tp": 2})"));
            }).find("knob 'tp' = 2 but this schedule's tensor-parallel group has 1 rank(s)"),
            std::string::npos);
}

TEST(TemplateTest, AConfigurationIsParsedOnceIntoATypedValue) {
  const models::ModelSpec spec = models::model_preset("gpt-mini");  // 6 blocks
  const models::TemplateConfig c = models::parse_template_config(
      "gpt", spec,
      Config::from_json(
          R"({"ckpt_ratio": 0.5, "attn": "fused_qkv", "mlp_shard": "row_col", "embed_shard": "hidden",
                           "fuse_layer_norm": true, "tp": 1, "pp": 2, "micro_batches": 4, "batch_size": 16})"),
      /*world_size=*/6);
  EXPECT_EQ(c.checkpointed_blocks, 3);
  EXPECT_EQ(c.attn, models::AttentionKind::kFusedQkv);
  EXPECT_EQ(c.attn_shard, models::PairShard::kColRow);  // the default
  EXPECT_EQ(c.mlp_shard, models::PairShard::kRowCol);
  EXPECT_EQ(c.embed_shard, models::EmbedShard::kHidden);
  EXPECT_TRUE(c.fuse_layer_norm);
  EXPECT_FALSE(c.fusion_graph);  // the eager path, the default
  EXPECT_FALSE(c.decompose);
  EXPECT_EQ(c.parallel.layout, (Layout{1, 3, 2}));  // dp fills the 6 ranks tp and pp leave
  EXPECT_EQ(c.parallel.micro_batches, 4);
  EXPECT_EQ(c.batch_size, 16);
  EXPECT_FALSE(c.seq_len.has_value());
  // Every knob a template understands is a row of the table, and only those apply to its family.
  const models::TemplateInfo& mlp = models::find_template("mlp");
  EXPECT_EQ(std::count(mlp.knobs.begin(), mlp.knobs.end(), "attn"), 0);
  EXPECT_NE(error_of([&] {
              models::check_template("mlp", models::model_preset("mlp-tiny"),
                                     Config::from_json(R"({"attn": "naive"})"));
            }).find("knob 'attn' is not understood by schedule template 'mlp'"),
            std::string::npos);
  for (const char* bad :
       {R"({"decompose": 1})", R"({"ckpt_layers": 2.5})", R"({"attn": 3})", R"({"cuts": 4})"}) {
    EXPECT_NE(error_of([&] { models::check_template("gpt", spec, Config::from_json(bad)); }), "")
        << bad;
  }
  EXPECT_EQ(error_of([&] {
              models::check_template("gpt", spec, Config::from_json(R"({"ckpt_layers": 2.5})"));
            }),
            "knob 'ckpt_layers': 2.5 is not a whole number");
  EXPECT_EQ(error_of([&] {
              models::check_template("gpt", spec,
                                     Config::from_json(R"({"ckpt_ratio": 0.5, "ckpt_layers": 1})"));
            }),
            "give either knob 'ckpt_ratio' or 'ckpt_layers', not both");
}

TEST(TemplateTest, FamilyTraitsSayWhereThingsAre) {
  EXPECT_EQ(models::model_preset("bert-tiny").traits().blocks, "encoder");
  EXPECT_EQ(models::model_preset("gpt-tiny").traits().embedding, "wte");
  EXPECT_FALSE(models::model_preset("mlp-tiny").traits().attention);
  EXPECT_TRUE(models::model_preset("bert-tiny").traits().head_bias);
  EXPECT_FALSE(models::model_preset("llama-tiny").traits().tied_head);
  EXPECT_EQ(models::model_preset("llama-tiny").key_value_heads(), 2);
  EXPECT_EQ(models::model_preset("gpt-tiny").key_value_heads(), 4);
  EXPECT_NE(error_of([] {
              models::family_traits("neo");
            }).find("unknown model family 'neo' (families: gpt, bert, mlp, gpt_neo, llama)"),
            std::string::npos);
  // The parameter count follows the traits (and the built model).
  for (const char* preset : {"gpt-tiny", "bert-tiny", "mlp-tiny", "llama-tiny", "llama-mini",
                             "gpt-neo-tiny", "gpt-neo-125m"}) {
    const models::ModelSpec spec = models::model_preset(preset);
    int64_t built = 0;
    for (const auto& t : unique_parameters(*models::build_model(spec, 0))) built += t.numel();
    EXPECT_EQ(spec.parameter_count(), built) << preset;
  }
}

}  // namespace
}  // namespace slapo::schedule
