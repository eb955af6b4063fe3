// slapo-tune weights and [workload] weights end to end: a checkpoint saved by `weights init` is
// what a trial starts from, sharded by the schedule like any weights; bad files are refused.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"

namespace {

using slapo::testing::last_line;
using slapo::testing::Outcome;
using slapo::testing::run;
using slapo::testing::temp_db;
using slapo::testing::write_temp;

std::string space_with(const std::string& name, const std::string& weights) {
  return write_temp(
      name,
      "[workload]\nmodel = \"gpt-tiny\"\nbatch_size = 4\nseq_len = 16\nwarmup = 0\n"
      "steps = 1\nthreads = 1\n" +
          (weights.empty() ? "" : "weights = \"" + weights + "\"\n") +
          "[knobs]\ntp = { values = [1, 2] }\nckpt_ratio = { values = [0.0, 0.5] }\n");
}

double first_loss(const std::string& space) {
  const Outcome r = run("trial --space " + space +
                        " --runner inprocess --json --config '{\"tp\": 1, \"ckpt_ratio\": 0.5}'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["status"], "ok") << j.dump();
  return j["metrics"]["loss_first"].get<double>();
}

TEST(WeightsCliTest, ATrialStartsFromTheCheckpoint) {
  const std::string same = write_temp("seed0.safetensors", "");
  const std::string other = write_temp("seed3.pt", "");
  ASSERT_EQ(run("weights init " + same + " --model gpt-tiny --seed 0").exit_code, 0);
  ASSERT_EQ(run("weights init " + other + " --model gpt-tiny --seed 3").exit_code, 0);
  const double random = first_loss(space_with("none.toml", ""));
  // The workload's own seed is 0: the same weights give exactly the same first loss...
  EXPECT_EQ(first_loss(space_with("same.toml", same)), random);
  // ... and others another.
  EXPECT_NE(first_loss(space_with("other.toml", other)), random);

  // Loaded, then sharded across two ranks: the scheduled model still computes the original's.
  const Outcome v = run("verify --space " + space_with("verify.toml", other) +
                        " --nproc 2 --config '{\"tp\": 2, \"ckpt_ratio\": 0.5}'");
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  const Outcome shown = run("weights show " + other + " --model gpt-tiny");
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  const size_t row = shown.out.find("h.1.mlp.fc_out.weight ");
  ASSERT_NE(row, std::string::npos) << shown.out;
  const std::string line = shown.out.substr(row, shown.out.find('\n', row) - row);
  EXPECT_NE(line.find(" Float "), std::string::npos) << line;
  EXPECT_NE(line.find("[32, 64]"), std::string::npos) << line;
  EXPECT_NE(last_line(shown.out).find("36 parameters loaded (layout zoo)"), std::string::npos)
      << shown.out;
  // Into a model of other shapes: refused, naming the tensor and both shapes.
  const Outcome wrong = run("weights show " + other + " --model gpt-mini");
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out << wrong.err;
  EXPECT_NE(wrong.err.find("'wte.weight' has shape [128, 32] in the file and [8192, 256]"),
            std::string::npos)
      << wrong.err;
}

// Each rank of a tp × pp job reads its shards and its stage after the schedule; with fused_qkv
// (which renames q, k, v into one parameter) the whole file is read before it. Both compute the
// single-process model that loaded the whole file.
TEST(WeightsCliTest, RanksLoadTheirPartOfTheCheckpoint) {
  const std::string weights = write_temp("ranks.safetensors", "");
  ASSERT_EQ(run("weights init " + weights + " --model gpt-tiny --seed 3").exit_code, 0);
  const std::string space = write_temp(
      "ranks.toml", "[workload]\nmodel = \"gpt-tiny\"\nbatch_size = 8\nseq_len = 16\nweights = \"" +
                        weights +
                        "\"\n[knobs]\ntp = { values = [1, 2] }\npp = { values = [1, 2] }\n"
                        "micro_batches = { values = [1, 2] }\nattn = { choice = [\"naive\", "
                        "\"fused_qkv\"] }\n");
  const Outcome staged = run("verify --space " + space +
                             " --nproc 4 --config '{\"tp\": 2, \"pp\": 2, \"micro_batches\": 2, "
                             "\"attn\": \"naive\"}'");
  EXPECT_EQ(staged.exit_code, 0) << staged.out << staged.err;
  EXPECT_NE(staged.out.find("verified rank 3"), std::string::npos) << staged.out;
  const Outcome renamed = run("verify --space " + space +
                              " --nproc 2 --config '{\"tp\": 2, \"pp\": 1, \"micro_batches\": 1, "
                              "\"attn\": \"fused_qkv\"}'");
  EXPECT_EQ(renamed.exit_code, 0) << renamed.out << renamed.err;
}

TEST(WeightsCliTest, ConvertWritesAHuggingFaceLayoutThatLoadsBackTheSame) {
  const std::string zoo = write_temp("convert-zoo.safetensors", "");
  const std::string hf = write_temp("convert-hf.safetensors", "");
  const std::string back = write_temp("convert-back.safetensors", "");
  ASSERT_EQ(run("weights init " + zoo + " --model gpt-tiny --seed 4").exit_code, 0);
  const Outcome to_hf = run("weights convert " + zoo + " " + hf + " --model gpt-tiny --to gpt2");
  ASSERT_EQ(to_hf.exit_code, 0) << to_hf.err;
  EXPECT_NE(to_hf.out.find("under the gpt2 layout's names"), std::string::npos) << to_hf.out;
  // GPT-2's own names (the q, k and v projections joined into c_attn), found as such on reading.
  const Outcome shown = run("weights show " + hf + " --model gpt-tiny");
  EXPECT_NE(shown.out.find("transformer.h.0.attn.c_attn.weight"), std::string::npos) << shown.out;
  EXPECT_NE(last_line(shown.out).find("(layout gpt2)"), std::string::npos) << shown.out;
  ASSERT_EQ(run("weights convert " + hf + " " + back + " --model gpt-tiny").exit_code, 0);
  // Back in the zoo's names, exactly the first file: a trial from either starts the same.
  EXPECT_EQ(first_loss(space_with("zoo.toml", zoo)), first_loss(space_with("back.toml", back)));
  const Outcome wrong = run("weights convert " + zoo + " " + back + " --model gpt-tiny --to bert");
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("--to bert: weight layout 'bert' is for bert models, not gpt"),
            std::string::npos)
      << wrong.err;
  EXPECT_EQ(run("weights init " + zoo + " --model gpt-tiny --to nope").exit_code, 2);
}

TEST(WeightsCliTest, BadCheckpointsAreRefusedInOneLine) {
  const std::string db = temp_db("weights-bad");
  const Outcome missing =
      run("single-device --space " + space_with("missing.toml", "/nonexistent/w.safetensors") +
          " --db " + db + " --trials 1");
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("[workload] weights: /nonexistent/w.safetensors: cannot open"),
            std::string::npos)
      << missing.err;
  const std::string junk = write_temp("junk.safetensors", "not a checkpoint at all");
  const Outcome bad = run("weights show " + junk);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("junk.safetensors: the safetensors header claims"), std::string::npos)
      << bad.err;
  EXPECT_EQ(run("weights convert " + junk + " --model gpt-tiny").exit_code, 2);  // OUT missing
  EXPECT_EQ(run("weights frobnicate " + junk).exit_code, 2);
}

}  // namespace
