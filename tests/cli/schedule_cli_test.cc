// slapo-tune verify and slapo-tune primitives, end to end.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::write_temp;

const std::string kVerifySpace =
    std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/gpt-tiny-verify.toml";

TEST(VerifyCliTest, ScheduledModelMatches) {
  Outcome r = run("verify --space " + kVerifySpace +
                  " --config '{\"ckpt_ratio\": 1.0, \"attn\": \"baddbmm\"}'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("sch[\"h.1\"].checkpoint()"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verified: tolerance 1e-05"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loss over 3 AdamW steps"), std::string::npos);
}

TEST(VerifyCliTest, TheFusedOptimizerFollowsAdamWsCurveExactly) {
  const std::string space = write_temp(
      "fused-adamw.toml",
      "[workload]\nmodel = 'gpt-tiny'\n[knobs]\nfused_adamw = { values = [false, true] }\n");
  Outcome r = run("verify --space " + space + " --config '{\"fused_adamw\": true}' --tolerance 0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("loss over 3 AdamW steps: max |diff| 0"), std::string::npos) << r.out;
  // With SGD there is no AdamW to fuse: refused, naming the knob.
  const std::string sgd = write_temp(
      "fused-sgd.toml",
      "[workload]\nmodel = 'gpt-tiny'\noptimizer = 'sgd'\n[knobs]\nfused_adamw = { values = [false, true] }\n");
  Outcome t = run("trial --space " + sgd + " --config '{\"fused_adamw\": true}' --json");
  EXPECT_NE((t.out + t.err).find("knob 'fused_adamw': the workload's optimizer is sgd, not adamw"),
            std::string::npos)
      << t.out << t.err;
}

TEST(VerifyCliTest, TheFusedLmLossComputesTheSameLossAndGradients) {
  for (const char* model : {"gpt-tiny", "llama-tiny"}) {
    const std::string space = write_temp(
        std::string("fused-lm-") + model + ".toml",
        std::string("[workload]\nmodel = '") + model +
            "'\n[knobs]\nfused_lm_loss = { values = [false, true] }\ntp = { values = [1, 2] }\n"
            "embed_shard = { choice = ['vocab', 'hidden', 'replicated'] }\n");
    auto config = [](int tp, const char* embed) {
      return std::string(" --config '{\"fused_lm_loss\": true, \"tp\": ") + std::to_string(tp) +
             ", \"embed_shard\": \"" + embed + "\"}'";
    };
    Outcome r = run("verify --space " + space + config(1, "vocab"));
    EXPECT_EQ(r.exit_code, 0) << model << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("sch[\"head\"].replace(slapo::models::FusedLmHeadImpl)"),
              std::string::npos)
        << r.out;
    // Split by vocabulary over two ranks (the vocabulary-parallel loss), or replicated: the
    // single-process model's loss and gradients on every rank.
    for (const char* embed : {"vocab", "replicated"}) {
      Outcome tp = run("verify --space " + space + " --nproc 2" + config(2, embed));
      EXPECT_EQ(tp.exit_code, 0) << model << " " << embed << "\n" << tp.out << tp.err;
      EXPECT_NE(tp.out.find("verified rank 1"), std::string::npos) << tp.out;
    }
    if (std::string(model) == "gpt-tiny") {
      // Two stages of two tensor-parallel ranks: the loss on the last stage, the tied embedding
      // (split by vocabulary) summed between the ends.
      const std::string piped = write_temp(
          "fused-lm-pp.toml",
          "[workload]\nmodel = 'gpt-tiny'\n[knobs]\nfused_lm_loss = { values = [false, true] "
          "}\ntp = { values = [2] }\npp = { values = [2] }\nmicro_batches = { "
          "values = [2] }\n");
      Outcome pp = run("verify --space " + piped +
                       " --nproc 4 --config '{\"fused_lm_loss\": true, \"tp\": 2, \"pp\": 2, "
                       "\"micro_batches\": 2}'");
      EXPECT_EQ(pp.exit_code, 0) << pp.out << pp.err;
      EXPECT_NE(pp.out.find("verified rank 3"), std::string::npos) << pp.out;
    }
    Outcome hidden = run("verify --space " + space + " --nproc 2" + config(2, "hidden"));
    EXPECT_EQ(hidden.exit_code, 2) << hidden.out << hidden.err;
    EXPECT_NE(hidden.err.find("knob 'fused_lm_loss': not with embed_shard = 'hidden'"),
              std::string::npos)
        << hidden.err;
  }
}

// BERT's fused loss: the head and the tied decoder on the masked positions only, the same loss
// and gradients as the whole logits' cross-entropy with ignored targets — in one process and split
// by vocabulary over two ranks (the decoder's bias too).
TEST(VerifyCliTest, BertsFusedLossPredictsTheMaskedPositionsOnly) {
  const std::string space =
      write_temp("fused-lm-bert.toml",
                 "[workload]\nmodel = 'bert-tiny'\n[knobs]\nfused_lm_loss = { values = [false, "
                 "true] }\ntp = { values = [1, 2] }\n");
  Outcome one = run("verify --space " + space + " --config '{\"fused_lm_loss\": true, \"tp\": 1}'");
  EXPECT_EQ(one.exit_code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("sch[\"decoder\"].replace(slapo::models::FusedLmHeadImpl)"),
            std::string::npos)
      << one.out;
  Outcome two =
      run("verify --space " + space + " --nproc 2 --config '{\"fused_lm_loss\": true, \"tp\": 2}'");
  EXPECT_EQ(two.exit_code, 0) << two.out << two.err;
  EXPECT_NE(two.out.find("verified rank 1"), std::string::npos) << two.out;
}

// Every kernel knob at once on two tensor-parallel ranks (eager fusions, the blocked attention, the
// vocabulary-parallel loss, the fused optimizer, checkpointed blocks): the single-process model's
// outputs, gradients and 3-step curve on both ranks.
TEST(VerifyCliTest, EveryKernelKnobAtTwoTensorParallelRanks) {
  for (const char* model : {"gpt-tiny", "bert-tiny"}) {
    const std::string space = write_temp(
        std::string("kernels-") + model + ".toml",
        std::string("[workload]\nmodel = '") + model +
            "'\n[knobs]\ntp = { values = [1, 2] }\nfuse_bias_gelu = { values = [false, true] }\n"
            "fuse_layer_norm = { values = [false, true] }\nfused_adamw = { values = [false, true] "
            "}\nattn = { choice = ['naive', 'memory_efficient'] }\nckpt_ratio = { values = [0.0, "
            "0.5] }\nfused_lm_loss = { values = [false, true] }\n");
    Outcome r = run("verify --space " + space +
                    " --nproc 2 --config '{\"tp\": 2, \"fuse_bias_gelu\": true, "
                    "\"fuse_layer_norm\": true, \"fused_adamw\": true, \"attn\": "
                    "\"memory_efficient\", \"ckpt_ratio\": 0.5, \"fused_lm_loss\": true}'");
    EXPECT_EQ(r.exit_code, 0) << model << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("verified rank 1"), std::string::npos) << r.out;
  }
}

TEST(VerifyCliTest, ConfigFromAFile) {
  const std::string config = write_temp("best.json", "{\"ckpt_ratio\": 0.5, \"attn\": \"naive\"}");
  Outcome r = run("verify --space " + kVerifySpace + " --config @" + config + " --steps 1");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(VerifyCliTest, BeyondToleranceExitsWithOne) {
  // A fused QKV projection sums in another order: not bit-identical, so tolerance 0 fails.
  Outcome r = run("verify --space " + kVerifySpace +
                  " --config '{\"ckpt_ratio\": 0.0, \"attn\": \"fused_qkv\"}' --tolerance 0");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos);
}

TEST(VerifyCliTest, BadInput) {
  Outcome outside = run("verify --space " + kVerifySpace +
                        " --config '{\"ckpt_ratio\": 0.25, \"attn\": \"naive\"}'");
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("knob 'ckpt_ratio': 0.25 is not in its domain"), std::string::npos)
      << outside.err;
  Outcome missing = run("verify --space " + kVerifySpace);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--config JSON is required"), std::string::npos);
  Outcome json = run("verify --space " + kVerifySpace + " --config '{oops'");
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_NE(json.err.find("--config: not valid JSON"), std::string::npos) << json.err;
  const std::string unknown = write_temp(
      "unknown.toml", "[workload]\nmodel = 'gpt-huge'\n[knobs]\nckpt_ratio = { values = [0.0] }\n");
  Outcome model = run("verify --space " + unknown + " --config '{\"ckpt_ratio\": 0.0}'");
  EXPECT_EQ(model.exit_code, 2);
  EXPECT_NE(model.err.find("unknown.toml: unknown model 'gpt-huge' (models: gpt2,"),
            std::string::npos)
      << model.err;
  const std::string foreign =
      write_temp("foreign.toml",
                 "[workload]\nmodel = 'mlp-tiny'\n[knobs]\nattn = { choice = ['fused_qkv'] }\n");
  Outcome knob = run("verify --space " + foreign + " --config '{\"attn\": \"fused_qkv\"}'");
  EXPECT_EQ(knob.exit_code, 2);
  EXPECT_NE(knob.err.find("foreign.toml: knob 'attn' is not understood by schedule template 'mlp'"),
            std::string::npos)
      << knob.err;
}

TEST(PrimitivesCliTest, ListAndHelp) {
  Outcome all = run("primitives");
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_NE(all.out.find("checkpoint"), std::string::npos);
  EXPECT_NE(all.out.find("cut_pipeline_stage"), std::string::npos);
  EXPECT_NE(all.out.find("find"), std::string::npos);
  EXPECT_EQ(run("primitives list").out, all.out);
  Outcome one = run("primitives show shard");
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_NE(one.out.find("sch[path].shard(name, axis)"), std::string::npos);
  Outcome unknown = run("primitives show fuse_everything");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown primitive 'fuse_everything'"), std::string::npos);
  // NOUN VERB: a primitive's name is not a verb.
  Outcome old = run("primitives shard");
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_NE(
      old.err.find("primitives: unknown action 'shard' (expected list, show NAME or reference)"),
      std::string::npos)
      << old.err;
}

// The reference sections of docs/schedule.md are what the tables print: the docs cannot drift
// from the primitives and knobs the code has.
TEST(PrimitivesCliTest, TheDocsHoldTheTablesReferences) {
  std::ifstream in(std::string(SLAPO_SOURCE_DIR) + "/docs/schedule.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  for (const char* command : {"primitives reference", "templates reference"}) {
    Outcome r = run(command);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(doc.find(r.out), std::string::npos)
        << "docs/schedule.md does not hold `slapo-tune " << command << "`; regenerate that section";
  }
}

TEST(TemplatesCliTest, ListAndShowComeFromTheKnobTable) {
  Outcome all = run("templates");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const char* t : {"gpt ", "bert ", "mlp "})
    EXPECT_NE(all.out.find(t), std::string::npos) << all.out;
  Outcome gpt = run("templates show gpt");
  ASSERT_EQ(gpt.exit_code, 0) << gpt.err;
  EXPECT_NE(gpt.out.find("attn_shard"), std::string::npos);
  EXPECT_NE(gpt.out.find("naive, fused_qkv, baddbmm, memory_efficient (default naive)"),
            std::string::npos)
      << gpt.out;
  Outcome mlp = run("templates show mlp");
  EXPECT_EQ(mlp.out.find("attn"), std::string::npos)
      << "an MLP has no attention knobs: " << mlp.out;
  Outcome llama = run("templates show llama");
  EXPECT_NE(llama.out.find("attn_shard"), std::string::npos) << llama.out;
  for (const char* absent : {"fuse_bias_gelu", "fuse_layer_norm", "decompose", "attn "})
    EXPECT_EQ(llama.out.find(absent), std::string::npos)
        << absent << " does not apply to a SwiGLU, RMSNorm, rotary model: " << llama.out;
  Outcome unknown = run("templates show neo");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find(
                "unknown schedule template 'neo' (templates: gpt, bert, mlp, gpt_neo, llama)"),
            std::string::npos)
      << unknown.err;
}

}  // namespace
