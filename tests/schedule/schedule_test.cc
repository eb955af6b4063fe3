// The schedule engine: paths, primitives' bookkeeping and their errors.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "core/error.h"
#include "error_of.h"
#include "models/attention.h"
#include "models/eager_fusions.h"
#include "models/fused_lm_head.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "schedule/language/build.h"
#include "schedule/language/primitives.h"
#include "schedule/language/replay.h"
#include "schedule/language/schedule.h"
#include "schedule/language/sequence.h"
#include "schedule/runtime/keyed_dropout.h"

namespace slapo::schedule {
namespace {

// A schedule that plans a split into `tp` parts without a group to execute it.
ScheduleOptions plan_options(int64_t tp, uint64_t seed) {
  ScheduleOptions o;
  o.tp_size = tp;
  o.seed = seed;
  return o;
}

std::shared_ptr<SlotModule> tiny_gpt() {
  return models::build_model(models::model_preset("gpt-tiny"), 1);
}

TEST(ScheduleTest, PathsMirrorTheModuleTree) {
  auto sch = create_schedule(tiny_gpt());
  EXPECT_EQ(sch["h.1.mlp.fc_in"].path(), "h.1.mlp.fc_in");
  EXPECT_EQ(sch["h"]["1"]["mlp"].path(), "h.1.mlp");
  EXPECT_NE(std::dynamic_pointer_cast<torch::nn::LinearImpl>(sch["h.1.mlp.fc_in"].module()),
            nullptr);
  std::vector<std::string> paths;
  for (const auto& [p, s] : sch->named_schedules()) paths.push_back(p);
  EXPECT_EQ(paths[0], "");
  EXPECT_NE(std::find(paths.begin(), paths.end(), "h.0.attn.q_proj"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "ln_f"), paths.end());
}

TEST(ScheduleTest, PathTypoSuggestsTheNearestPaths) {
  auto sch = create_schedule(tiny_gpt());
  const std::string e = error_of([&] { sch["h.1.mlp.fc_inn"]; });
  EXPECT_NE(e.find("no module at path 'h.1.mlp.fc_inn'"), std::string::npos) << e;
  EXPECT_NE(e.find("children: fc_in, act, fc_out, drop"), std::string::npos) << e;
  EXPECT_NE(e.find("nearest paths: h.1.mlp.fc_in"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { sch["h.7"]; }).find("(children: 0, 1)"), std::string::npos);
}

TEST(ScheduleTest, PrimitivesAreRecordedAndPrinted) {
  auto sch = create_schedule(tiny_gpt(), plan_options(2, 0));
  sch["h.0"].checkpoint();
  sch["h.0.mlp.fc_in"].shard("weight", 0);
  sch["h.0.attn.attn_drop"].fork_rng(7);
  sch["h.0"].cut_pipeline_stage();
  EXPECT_EQ(sch->to_string(),
            "sch[\"h.0\"].checkpoint()\n"
            "sch[\"h.0.mlp.fc_in\"].shard(\"weight\", 0)\n"
            "sch[\"h.0.attn.attn_drop\"].fork_rng(7)\n"
            "sch[\"h.0\"].cut_pipeline_stage()\n");
  const BuildResult built = build(*sch);
  EXPECT_EQ(built.plan.checkpointed, std::vector<std::string>{"h.0"});
  EXPECT_EQ(built.plan.cuts, std::vector<std::string>{"h.0"});
  ASSERT_EQ(built.plan.shards.size(), 1u);
  EXPECT_EQ(built.plan.shards[0].parts, 2);
  EXPECT_NE(built.plan_text().find("h.0.mlp.fc_in.weight@0/2"), std::string::npos)
      << built.plan_text();
  // Every parameter is in exactly one group.
  size_t grouped = 0;
  for (const auto& g : built.param_groups) grouped += g.params.size();
  EXPECT_EQ(grouped, unique_parameters(*built.module).size());
}

TEST(ScheduleTest, MisuseGivesClearErrors) {
  auto sch = create_schedule(tiny_gpt(), plan_options(3, 0));
  // hidden 32 does not split into 3.
  EXPECT_EQ(
      error_of([&] { sch["h.0.mlp.fc_in"].shard("bias", 0); }),
      "shard on 'h.0.mlp.fc_in': 'bias' has size 64 along axis 0, which does not divide into 3 parts");
  EXPECT_NE(
      error_of([&] { sch["h.0.mlp.fc_in"].shard("weight", 2); }).find("axis 2 is out of range"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              sch["h.0.mlp.fc_in"].shard("wieght", 0);
            }).find("has no parameter or buffer 'wieght' (it has: weight, bias)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sch[""].cut_pipeline_stage(); }).find("cannot cut at the root"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sch["h.0.attn"].cut_pipeline_stage(); }).find("is not a Sequence"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sch["h.1"].cut_pipeline_stage(); }).find("the last child of 'h'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sch[""].checkpoint(); }).find("cannot be applied to the root"),
            std::string::npos);
  sch["h.0"].checkpoint();
  EXPECT_NE(error_of([&] { sch["h.0"].checkpoint(); }).find("already checkpointed"),
            std::string::npos);
  // A module with another forward signature cannot take a slot's place.
  EXPECT_EQ(
      error_of([&] { sch["h.0.mlp"].replace(torch::nn::Bilinear(32, 32, 32)); }),
      "replace on 'h.0.mlp': the new module's forward is Tensor(const Tensor&, const Tensor&) but the slot "
      "expects Tensor(const Tensor&)");
}

TEST(ScheduleTest, ShardingTwiceAndTiedParameters) {
  // A module holding one tensor under two names.
  struct TiedImpl : SlotModule {
    TiedImpl() {
      auto a = add_slot("a", torch::nn::Linear(4, 4));
      head_ = register_parameter("head", a->weight);  // e.g. an LM head tied to an embedding
    }
    torch::Tensor forward(const torch::Tensor& x) { return torch::matmul(call("a", x), head_); }
    torch::Tensor head_;
  };
  auto sch = create_schedule(std::make_shared<TiedImpl>(), plan_options(2, 0));
  sch["a"].shard("weight", 1);
  EXPECT_EQ(sch->record().shards[0].tied, std::vector<std::string>{"head"});
  EXPECT_EQ(error_of([&] { sch[""].shard("head", 0); }),
            "shard on '': 'head' is already sharded along axis 1 (by 'a.weight')");
}

TEST(ScheduleTest, ReplaceMovesAnnotationsByName) {
  auto sch = create_schedule(tiny_gpt(), plan_options(2, 0));
  sch["h.0.mlp.fc_in"].annotate("weight", "tp", "column").annotate("bias", "tp", "column");
  sch["h.0.mlp.fc_in"].shard("weight", 0);
  EXPECT_EQ(sch["h.0.mlp.fc_in"].annotations("weight").at("tp"), "column");
  sch["h.0.mlp.fc_in"].replace(torch::nn::Linear(32, 64));
  EXPECT_EQ(sch["h.0.mlp.fc_in"].annotations("weight").at("tp"), "column");
  EXPECT_EQ(sch["h.0.mlp.fc_in"].annotations("bias").at("tp"), "column");
  EXPECT_EQ(build(*sch).plan.replaced[0].first, "h.0.mlp.fc_in");
  // The model now runs the new module.
  auto* mlp = dynamic_cast<SlotModule*>(sch["h.0.mlp"].module().get());
  EXPECT_EQ(mlp->slot("fc_in").module.ptr().get(), sch["h.0.mlp.fc_in"].module().get());
}

TEST(ScheduleTest, ReplaceAllAndTheSubScheduleMirrorsTheNewModule) {
  auto sch = create_schedule(tiny_gpt());
  const int n = sch->replace_all<models::AttentionImpl>(
      [](models::AttentionImpl& a) { return models::FusedQkvAttention(a); });
  EXPECT_EQ(n, 2);
  EXPECT_EQ(sch["h.1.attn.qkv"].path(), "h.1.attn.qkv");
  EXPECT_NE(error_of([&] { sch["h.1.attn.q_proj"]; }).find("no module at path"), std::string::npos);
}

TEST(ScheduleTest, TheEagerFusionsAndTheFusedHeadReplayFromText) {
  struct Case {
    const char* knobs;
    std::vector<const char*> made;  // the types the printed schedule puts in
    const char* residual_type;      // h.1.attn_residual's after the replay
  };
  const std::vector<Case> cases = {
      {R"({"fuse_layer_norm": true, "fuse_bias_gelu": true, "fused_lm_loss": true,
           "attn": "memory_efficient"})",
       {"FusedLayerNormImpl", "FusedMlpImpl", "FusedLmHeadImpl", "MemoryEfficientAttentionImpl",
        "LayerNormAfterAddImpl", "FusedAddLayerNormImpl"},
       "FusedAddLayerNormImpl"},
      {R"({"fuse_bias_dropout_add": true, "fuse_bias_gelu": true, "attn": "baddbmm"})",
       {"FusedBiasDropoutAddImpl", "LinearBiasLaterImpl", "IdentityImpl", "FusedMlpImpl"},
       "FusedBiasDropoutAddImpl"},
  };
  for (const Case& c : cases) {
    auto sch = create_schedule(tiny_gpt());
    models::apply_template(*sch, models::model_preset("gpt-tiny"), "gpt",
                           Config::from_json(c.knobs));
    const std::string text = sch->to_string();
    for (const char* made : c.made)
      EXPECT_NE(text.find(made), std::string::npos) << made << " not in\n" << text;

    auto fresh = create_schedule(tiny_gpt());
    replay(*fresh, parse_schedule_text(text), models::replace_with_zoo_module);
    EXPECT_EQ(fresh->to_string(), text);
    EXPECT_NE(
        c10::demangle(typeid(*(*fresh)["h.1.attn_residual"].module()).name()).find(c.residual_type),
        std::string::npos)
        << c.knobs;
    // The same function, dropout included (both models built from one seed, one dropout key).
    const torch::Tensor tokens = torch::randint(128, {2, 8}, torch::kLong);
    DropoutScope scope(0, 0);
    EXPECT_TRUE(torch::allclose(models::model_forward(*build(*sch).module, tokens),
                                models::model_forward(*build(*fresh).module, tokens), 1e-6, 1e-6))
        << c.knobs;
  }

  // Under tensor parallelism the head's split is the template's: said, not guessed.
  auto planned = create_schedule(tiny_gpt(), plan_options(2, 0));
  EXPECT_NE(error_of([&] {
              models::replace_with_zoo_module(
                  (*planned)["head"], c10::demangle(typeid(models::FusedLmHeadImpl).name()));
            }).find("replay the configuration through its template"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              models::replace_with_zoo_module((*planned)["h.0.attn"],
                                              c10::demangle(typeid(models::FusedMlpImpl).name()));
            }).find("the zoo makes it from the zoo's MLP only"),
            std::string::npos);
}

TEST(ScheduleTest, PrintedScheduleReplaysOnAFreshModel) {
  auto sch = create_schedule(tiny_gpt(), plan_options(2, 5));
  models::apply_template(*sch, models::model_preset("gpt-tiny"), "gpt",
                         Config::from_json(R"({"ckpt_ratio": 0.5, "attn": "fused_qkv"})"));
  sch["h.0.mlp.fc_in"].annotate("weight", "note", "say \"hi\", ok").shard("weight", 0);
  sch["h.1.mlp.drop"].fork_rng();
  sch["h.0"].cut_pipeline_stage();
  const std::string text = sch->to_string();

  auto fresh = create_schedule(tiny_gpt(), plan_options(2, 5));
  replay(*fresh, parse_schedule_text("# a comment\n\n" + text), models::replace_with_zoo_module);
  EXPECT_EQ(fresh->to_string(), text);
  EXPECT_EQ((*fresh)["h.0.mlp.fc_in"].annotations("weight").at("note"), "say \"hi\", ok");
  EXPECT_NE(std::dynamic_pointer_cast<models::FusedQkvAttentionImpl>((*fresh)["h.1.attn"].module()),
            nullptr);
  EXPECT_EQ(build(*fresh).plan.checkpointed, build(*sch).plan.checkpointed);

  EXPECT_NE(error_of([&] {
              replay(*create_schedule(tiny_gpt()), parse_schedule_text(text));
            }).find("replacing needs a module factory"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parse_schedule_text("sch[\"h.0\"].checkpoint()\nh.0.checkpoint()\n"); }),
            "schedule line 2: expected sch[\"path\"].primitive(args), found: h.0.checkpoint()");
  EXPECT_NE(error_of([&] {
              replay(*create_schedule(tiny_gpt()), parse_schedule_text("sch[\"h.0\"].vectorize()"));
            }).find("unknown primitive 'vectorize'"),
            std::string::npos);
}

TEST(ScheduleTest, PrimitivesAreListedWithHelp) {
  std::vector<std::string> names;
  for (const auto& p : list_primitives()) {
    names.push_back(p.name);
    EXPECT_FALSE(p.summary.empty());
    EXPECT_NE(p.help.find("sch[path]." + p.name), std::string::npos) << p.name;
  }
  for (const char* n :
       {"replace", "checkpoint", "fork_rng", "annotate", "shard", "cut_pipeline_stage"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  EXPECT_NE(error_of([] { find_primitive("fuse_all"); }).find("unknown primitive 'fuse_all'"),
            std::string::npos);
}

}  // namespace
}  // namespace slapo::schedule
