// Distributed execution across real processes over Gloo on this machine: collectives, GPipe vs
// 1F1B, faults, two jobs at once, and `slapo-tune verify --nproc` for every parallel layout of the
// templates against the single-process model (float32, tiny presets, dropout on).

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/process.h"
#include "dist/launcher.h"

namespace {

using slapo::Error;
using slapo::dist::check_not_in_a_rank;
using slapo::dist::LaunchOptions;
using slapo::dist::LaunchResult;

LaunchResult launch(const std::string& mode, int nproc, int collective_timeout_s = 30,
                    double timeout_s = 120) {
  LaunchOptions o;
  o.nproc = nproc;
  o.argv = {RANK_PROGRAM, mode};
  o.env = {{"OMP_NUM_THREADS", "1"}, {"OMP_WAIT_POLICY", "passive"}};
  o.collective_timeout_s = collective_timeout_s;
  o.timeout_s = timeout_s;
  return slapo::dist::launch_ranks(o);
}

std::string outputs(const LaunchResult& r) {
  std::string all;
  for (size_t i = 0; i < r.ranks.size(); ++i)
    all += "[rank " + std::to_string(i) + "] " + r.ranks[i].out + r.ranks[i].err;
  return all;
}

// A rank of a job launches no job of slapo's own: a test binary whose cost model launched
// "itself worker" re-ran its tests in every rank, each launching more.
TEST(DistTest, ARankLaunchesNoJobOfItsOwn) {
  EXPECT_NO_THROW(check_not_in_a_rank("profiling", {"slapo-tune", "worker"}));
  ::setenv("WORLD_SIZE", "2", 1);
  try {
    check_not_in_a_rank("profiling", {"/tmp/runners_test", "worker"});
    ADD_FAILURE() << "a rank was let launch a job";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'/tmp/runners_test'"), std::string::npos) << e.what();
  }
  ::unsetenv("WORLD_SIZE");
}

TEST(DistTest, CollectivesAndTheirConjugates) {
  const LaunchResult r = launch("collectives", 2);
  EXPECT_TRUE(r.ok()) << r.failure() << "\n" << outputs(r);
  EXPECT_GT(r.port, 0);
}

TEST(DistTest, GPipeAndOneFOneBGiveIdenticalGradients) {
  const LaunchResult r = launch("schedules", 4);
  EXPECT_TRUE(r.ok()) << r.failure() << "\n" << outputs(r);
  for (const auto& rank : r.ranks)
    EXPECT_NE(rank.out.find("gradients identical"), std::string::npos) << rank.out;
}

TEST(DistTest, StagesPassTheMaskOfBlocksWithGeneralSignatures) {
  const LaunchResult r = launch("masked_pipeline", 2);
  EXPECT_TRUE(r.ok()) << r.failure() << "\n" << outputs(r);
  for (const auto& rank : r.ranks)
    EXPECT_NE(rank.out.find("gradients as in one process"), std::string::npos) << rank.out;
}

TEST(DistTest, ARankThatDiesFailsThePeersQuickly) {
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult r = launch("die", 2, /*collective_timeout_s=*/20);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].exit_code, 3);
  EXPECT_EQ(r.ranks[0].exit_code, 0) << outputs(r);  // it saw the failure and said so
  EXPECT_NE(r.ranks[0].out.find("all_reduce on group 'dp"), std::string::npos) << r.ranks[0].out;
  EXPECT_LT(s, 15.0) << "a dead peer must not cost the whole timeout";
  EXPECT_NE(r.failure().find("rank 1 exited with 3"), std::string::npos) << r.failure();
}

TEST(DistTest, OutOfMemoryInsideACollectiveStaysOutOfMemory) {
  const LaunchResult r = launch("collective_oom", 2);
  ASSERT_EQ(r.ranks.size(), 2u);
  // Rank 0 runs out of memory in the all-gather; rank 1 may fit or see its peer fail.
  EXPECT_NE(r.ranks[0].out.find("out of memory: all_gather on group 'tp"), std::string::npos)
      << outputs(r);
  EXPECT_NE(r.ranks[0].out.find("slapo memory budget"), std::string::npos) << outputs(r);
}

TEST(DistTest, ARankThatHangsFailsThePeersAtTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult r = launch("hang", 2, /*collective_timeout_s=*/2, /*timeout_s=*/8);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].exit_code, 0) << outputs(r);
  EXPECT_NE(r.ranks[0].out.find("failed after"), std::string::npos) << r.ranks[0].out;
  EXPECT_TRUE(r.ranks[1].timed_out);  // the launcher's limit ended the hung one
  EXPECT_LT(s, 30.0);
  EXPECT_NE(r.failure().find("rank 1 was killed at the time limit"), std::string::npos)
      << r.failure();
}

TEST(DistTest, TwoJobsAtOnceDoNotCollide) {
  auto a = std::async(std::launch::async, [] { return launch("collectives", 2); });
  auto b = std::async(std::launch::async, [] { return launch("collectives", 2); });
  const LaunchResult ra = a.get(), rb = b.get();
  EXPECT_TRUE(ra.ok()) << ra.failure() << outputs(ra);
  EXPECT_TRUE(rb.ok()) << rb.failure() << outputs(rb);
  EXPECT_NE(ra.port, rb.port);
}

TEST(DistTest, BadRankEnvironmentAndMissingNprocAreOneLineErrors) {
  slapo::ProcessOptions o;
  o.timeout_s = 60;
  // A rank launched with a malformed variable: exit 2, naming it.
  o.env = {{"WORLD_SIZE", "two"}, {"RANK", "0"}};
  const std::string space =
      std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/mlp-tiny-parallel.toml";
  const std::string config =
      R"({"tp": 2, "dp": 1, "mlp_shard": "col_row", "embed_shard": "vocab", "decompose": false})";
  const slapo::ProcessResult bad =
      slapo::run_process({SLAPO_TUNE, "verify", "--space", space, "--config", config}, o);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("environment variable WORLD_SIZE='two' is not an integer"),
            std::string::npos)
      << bad.err;
  // Two ranks' worth of layout without --nproc (and not under a launcher): says what to pass.
  o.env = {};
  const slapo::ProcessResult missing =
      slapo::run_process({SLAPO_TUNE, "verify", "--space", space, "--config", config}, o);
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_NE(missing.err.find("needs tp·pp·dp = 2 ranks: pass --nproc 2"), std::string::npos)
      << missing.err;
}

// ---- verify --nproc: every layout matches the single-process model --------------------------

struct Layout {
  const char* name;
  const char* space;
  const char* config;
  int nproc;
};

// Test names carry the layout's name; gtest would print the struct's bytes otherwise.
void PrintTo(const Layout& l, std::ostream* os) { *os << l.name; }

std::string space_path(const char* name) {
  return std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/" + name;
}

class VerifyLayoutTest : public ::testing::TestWithParam<Layout> {};

TEST_P(VerifyLayoutTest, MatchesTheSingleProcessModel) {
  const Layout& l = GetParam();
  slapo::ProcessOptions o;
  o.timeout_s = 300;
  const slapo::ProcessResult r =
      slapo::run_process({SLAPO_TUNE, "verify", "--space", space_path(l.space), "--config",
                          l.config, "--nproc", std::to_string(l.nproc), "--steps", "10",
                          "--tolerance", "1e-5", "--curve-tolerance", "1e-4"},
                         o);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  size_t verified = 0;
  for (size_t at = r.out.find("verified rank"); at != std::string::npos;
       at = r.out.find("verified rank", at + 1))
    ++verified;
  EXPECT_EQ(verified, static_cast<size_t>(l.nproc)) << r.out;
}

// The knobs every configuration of gpt-tiny-parallel.toml names, with the layout in front.
#define GPT(layout, rest)                                                         \
  "{" layout                                                                      \
  ", \"attn\": \"naive\", \"ckpt_ratio\": 0.5, \"pipeline_schedule\": \"1f1b\", " \
  "\"micro_batches\": 2" rest "}"
#define SHARDS(attn, mlp, embed) \
  ", \"attn_shard\": \"" attn "\", \"mlp_shard\": \"" mlp "\", \"embed_shard\": \"" embed "\""

// The knobs every configuration of llama-tiny-parallel.toml names.
#define LLAMA(layout, shard, embed)                                                          \
  "{\"tp\": " layout ", \"micro_batches\": 2, \"ckpt_ratio\": 0.5, \"attn_shard\": \"" shard \
  "\", \"mlp_shard\": \"" shard "\", \"embed_shard\": \"" embed "\"}"

#define NEO(layout, shard, embed)                                                            \
  "{\"tp\": " layout ", \"micro_batches\": 2, \"ckpt_ratio\": 0.5, \"attn_shard\": \"" shard \
  "\", \"mlp_shard\": \"" shard "\", \"embed_shard\": \"" embed                              \
  "\", \"fuse_bias_dropout_add\": false}"

INSTANTIATE_TEST_SUITE_P(
    Layouts, VerifyLayoutTest,
    ::testing::Values(
        Layout{"tp2_megatron", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 1, \"dp\": 1", SHARDS("col_row", "col_row", "vocab")), 2},
        Layout{"tp2_row_col_hidden", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 1, \"dp\": 1", SHARDS("row_col", "row_col", "hidden")), 2},
        Layout{"tp2_replicated_embedding", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 1, \"dp\": 1", SHARDS("col_row", "row_col", "replicated")),
               2},
        Layout{"pp2", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 1, \"pp\": 2, \"dp\": 1", SHARDS("col_row", "col_row", "vocab")), 2},
        Layout{"dp2", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 1, \"pp\": 1, \"dp\": 2", SHARDS("col_row", "col_row", "vocab")), 2},
        Layout{"tp2_pp2", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 2, \"dp\": 1", SHARDS("col_row", "col_row", "vocab")), 4},
        Layout{"tp2_pp2_dp2", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 2, \"dp\": 2", SHARDS("col_row", "col_row", "vocab")), 8},
        Layout{"tp2_pp2_dp2_row_col", "gpt-tiny-parallel.toml",
               GPT("\"tp\": 2, \"pp\": 2, \"dp\": 2", SHARDS("row_col", "row_col", "hidden")), 8},
        Layout{
            "tp2_fused_qkv", "gpt-tiny-parallel.toml",
            "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"attn\": \"fused_qkv\", \"ckpt_ratio\": 0.0, \"pipeline_schedule\": "
            "\"gpipe\", \"micro_batches\": 1" SHARDS("col_row", "col_row", "vocab") "}",
            2},
        Layout{
            "tp2_baddbmm_row_col", "gpt-tiny-parallel.toml",
            "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"attn\": \"baddbmm\", \"ckpt_ratio\": 1.0, \"pipeline_schedule\": "
            "\"gpipe\", \"micro_batches\": 4" SHARDS("row_col", "col_row", "vocab") "}",
            2},
        // The blocked attention kernel: dropout masks drawn on each rank's heads, checkpointed
        // blocks recomputing it; causal (GPT) and bidirectional (BERT).
        Layout{
            "tp2_memory_efficient", "gpt-tiny-parallel.toml",
            "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"attn\": \"memory_efficient\", \"ckpt_ratio\": 0.5, \"pipeline_schedule\": "
            "\"1f1b\", \"micro_batches\": 2" SHARDS("col_row", "col_row", "vocab") "}",
            2},
        Layout{
            "bert_tp2_memory_efficient_row_col", "bert-tiny-parallel.toml",
            "{\"tp\": 2, \"pp\": 1, \"dp\": 1, \"micro_batches\": 2, \"cuts\": [], \"attn\": \"memory_efficient\", \"attn_shard\": \"row_col\", \"mlp_shard\": \"col_row\", \"embed_shard\": \"vocab\"}",
            2},
        Layout{
            "bert_tp2_pp2", "bert-tiny-parallel.toml",
            "{\"tp\": 2, \"pp\": 2, \"dp\": 1, \"micro_batches\": 1, \"cuts\": [1], \"attn_shard\": \"col_row\", \"mlp_shard\": \"row_col\", \"embed_shard\": \"vocab\", \"attn\": \"naive\"}",
            4},
        // The masked-LM loss of equal parts (micro-batches, data-parallel shards) averages to the
        // whole batch's: every sequence predicts the same number of positions.
        Layout{
            "bert_pp2_dp2_micro_batches", "bert-tiny-parallel.toml",
            "{\"tp\": 1, \"pp\": 2, \"dp\": 2, \"micro_batches\": 2, \"cuts\": [1], \"attn_shard\": \"col_row\", \"mlp_shard\": \"row_col\", \"embed_shard\": \"vocab\", \"attn\": \"naive\"}",
            4},
        // LLaMA: RMSNorm, rotary, SwiGLU (gate and up split together), 4 query heads sharing 2
        // key/value heads (each rank one key/value head and its two query heads), untied head.
        Layout{"llama_tp2", "llama-tiny-parallel.toml",
               LLAMA("2, \"pp\": 1, \"dp\": 1", "col_row", "vocab"), 2},
        Layout{"llama_tp2_row_col_hidden", "llama-tiny-parallel.toml",
               LLAMA("2, \"pp\": 1, \"dp\": 1", "row_col", "hidden"), 2},
        Layout{"llama_pp2", "llama-tiny-parallel.toml",
               LLAMA("1, \"pp\": 2, \"dp\": 1", "col_row", "vocab"), 2},
        Layout{"llama_dp2", "llama-tiny-parallel.toml",
               LLAMA("1, \"pp\": 1, \"dp\": 2", "col_row", "vocab"), 2},
        Layout{"llama_tp2_pp2", "llama-tiny-parallel.toml",
               LLAMA("2, \"pp\": 2, \"dp\": 1", "col_row", "vocab"), 4},
        // GPT-Neo: local attention on block 1, unscaled, q/k/v without biases, tanh GELU.
        Layout{"neo_tp2", "gpt-neo-tiny-parallel.toml",
               NEO("2, \"pp\": 1, \"dp\": 1", "col_row", "vocab"), 2},
        Layout{"neo_tp2_row_col_hidden", "gpt-neo-tiny-parallel.toml",
               NEO("2, \"pp\": 1, \"dp\": 1", "row_col", "hidden"), 2},
        Layout{"neo_pp2_dp2", "gpt-neo-tiny-parallel.toml",
               NEO("1, \"pp\": 2, \"dp\": 2", "col_row", "vocab"), 4},
        Layout{
            "mlp_tp2_dp2", "mlp-tiny-parallel.toml",
            "{\"tp\": 2, \"dp\": 2, \"mlp_shard\": \"row_col\", \"embed_shard\": \"hidden\", \"decompose\": false}",
            4},
        // Decomposed Linears (matmul + bias add) sharded both ways: the row-split one adds its bias
        // after the reduce.
        Layout{
            "mlp_tp2_decomposed", "mlp-tiny-parallel.toml",
            "{\"tp\": 2, \"dp\": 1, \"mlp_shard\": \"col_row\", \"embed_shard\": \"vocab\", \"decompose\": true}",
            2},
        Layout{
            "mlp_tp2_decomposed_row_col", "mlp-tiny-parallel.toml",
            "{\"tp\": 2, \"dp\": 1, \"mlp_shard\": \"row_col\", \"embed_shard\": \"vocab\", \"decompose\": true}",
            2}),
    [](const ::testing::TestParamInfo<Layout>& info) { return std::string(info.param.name); });

}  // namespace
