// The block probe (runners/block_probe.h) and the profiles derived with it: what one block of a
// key differs by from one of another, measured on the blocks alone, and a derived profile whose
// memory is exactly what the new key's full profile predicts.

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "core/config.h"
#include "core/error.h"
#include "cost/collectives.h"
#include "cost/predictor.h"
#include "models/model_spec.h"
#include "runners/block_probe.h"
#include "runners/profiler.h"
#include "runners/workload.h"
#include "tests/runners/tiny_workload.h"

namespace slapo::runners {
namespace {

Config attention(const std::string& variant) {
  Config c;
  c.set("attn", Value(variant));
  return c;
}

// A profile request of the tiny workload at `attn`, batches 2 to 8.
ProfileRequest request(const std::string& attn) {
  ProfileRequest r;
  r.workload = tiny_test_workload(2);
  r.knobs = attention(attn);
  r.batch_lo = 2;
  r.batch_hi = 8;
  return r;
}

TEST(BlockProbeTest, ABlockDiffersFromItselfByNoByte) {
  const std::vector<std::vector<cost::BlockDifference>> all = probe_block_differences(
      tiny_test_workload(2), attention("naive"), {attention("naive")}, {1, 4}, 4);
  ASSERT_EQ(all.size(), 1u);
  const std::vector<cost::BlockDifference>& d = all[0];
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].batch, 1);
  EXPECT_EQ(d[1].batch, 4);
  EXPECT_FALSE(d[1].checkpointed);
  EXPECT_EQ(d[2].batch, 4);
  EXPECT_TRUE(d[2].checkpointed);
  for (const cost::BlockDifference& x : d) {
    EXPECT_EQ(x.kept_bytes, 0) << x.batch;
    EXPECT_EQ(x.transient_bytes, 0) << x.batch;
    EXPECT_TRUE(std::isfinite(x.ms));
    EXPECT_TRUE(std::isfinite(x.forward_ms));
  }
}

TEST(BlockProbeTest, AttentionThatKeepsNoProbabilitiesKeepsLessPerSample) {
  const Workload w = tiny_test_workload(2);
  const models::ModelSpec spec = w.spec();
  const std::vector<cost::BlockDifference> d =
      probe_block_differences(w, attention("naive"), {attention("memory_efficient")}, {2, 8}, 0)[0];
  ASSERT_EQ(d.size(), 2u);
  // Naive attention keeps its probabilities (seq x seq floats per head and sample) for backward.
  const double probabilities = static_cast<double>(spec.heads * 16 * 16 * 4);
  for (const cost::BlockDifference& x : d) {
    EXPECT_LT(x.kept_bytes, -static_cast<double>(x.batch) * probabilities) << x.batch;
  }
  // And the more samples, the more it saves.
  EXPECT_LT(d[1].kept_bytes, 3 * d[0].kept_bytes);
}

// Keys probed together differ from the base by the bytes each differs by probed alone: a block
// beside others keeps and needs what it does alone.
TEST(BlockProbeTest, KeysProbedTogetherDifferByWhatEachDoesAlone) {
  const Workload w = tiny_test_workload(2);
  const std::vector<Config> keys = {attention("memory_efficient"), attention("fused_qkv")};
  const auto together = probe_block_differences(w, attention("naive"), keys, {2, 8}, 8);
  ASSERT_EQ(together.size(), 2u);
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto alone = probe_block_differences(w, attention("naive"), {keys[i]}, {2, 8}, 8)[0];
    ASSERT_EQ(together[i].size(), alone.size());
    for (size_t j = 0; j < alone.size(); ++j) {
      EXPECT_EQ(together[i][j].batch, alone[j].batch);
      EXPECT_EQ(together[i][j].checkpointed, alone[j].checkpointed);
      EXPECT_EQ(together[i][j].kept_bytes, alone[j].kept_bytes) << i << " " << j;
      EXPECT_EQ(together[i][j].transient_bytes, alone[j].transient_bytes) << i << " " << j;
    }
  }
  // The blocks' parameters: fusing q, k and v into one product keeps their number.
  EXPECT_EQ(together[1][0].params, 0);
  // And they are not the same difference: the check can fail.
  EXPECT_NE(together[0][1].kept_bytes, together[1][1].kept_bytes);
}

// What the profiler composes for a checkpointed block (cost::checkpointed_from_plain) is what the
// checkpointed blocks measure: nothing kept beyond the input, and in backward what the plain block
// kept plus what its backward needs.
TEST(BlockProbeTest, TheComposedCheckpointedDifferenceIsTheMeasuredOne) {
  const Workload w = tiny_test_workload(2);
  for (const char* variant : {"memory_efficient", "fused_qkv", "baddbmm"}) {
    const std::vector<cost::BlockDifference> d =
        probe_block_differences(w, attention("naive"), {attention(variant)}, {2, 8}, 8)[0];
    ASSERT_EQ(d.size(), 3u);
    ASSERT_TRUE(d[2].checkpointed);
    const cost::BlockDifference composed = cost::checkpointed_from_plain(d[1]);
    EXPECT_EQ(composed.batch, 8);
    EXPECT_TRUE(composed.checkpointed);
    EXPECT_EQ(composed.kept_bytes, d[2].kept_bytes) << variant;
    EXPECT_EQ(composed.transient_bytes, d[2].transient_bytes) << variant;
  }
}

// Memory is exact on both sides: a profile derived from the blocks alone predicts the peak the
// new key's own full profile predicts (checkpointed, never less).
TEST(BlockProbeTest, ADerivedProfilePredictsTheFullProfilesPeak) {
  const ProfileRequest full = request("memory_efficient");
  const cost::Profile own = measure_profile(full);
  ProfileRequest base = full;
  base.knobs = attention("naive");
  ProfileRequest derived = full;
  derived.base = measure_profile(base);
  derived.base_knobs = base.knobs;
  const cost::Profile from_blocks = measure_profile(derived);
  size_t measured = 0;
  for (const cost::ProfilePoint& q : from_blocks.points) measured += q.derived ? 0 : 1;
  EXPECT_EQ(measured, 0u) << "no step of the derived key is run whole";

  // Its parameters are the key's own, though no model of it but its block was built.
  EXPECT_EQ(from_blocks.shape.block_params, own.shape.block_params);
  EXPECT_EQ(from_blocks.shape.prologue_params, own.shape.prologue_params);
  EXPECT_EQ(from_blocks.shape.epilogue_params, own.shape.epilogue_params);
  EXPECT_EQ(from_blocks.shape.tied_params, own.shape.tied_params);

  const cost::Predictor a(own), b(from_blocks), naive(*derived.base);
  for (int64_t batch : {2, 6, 8}) {
    for (int64_t ckpt : {int64_t{0}, int64_t{1}, own.layers}) {
      cost::PredictInput in;
      in.batch = batch;
      in.ckpt_blocks = ckpt;
      // Without checkpointing the same within 1%; checkpointed, never under (a shrinking
      // transient is not counted: cost/derived_profile.h) and over by a few percent at most.
      const double expected = a.predict(in).peak_bytes, derived_peak = b.predict(in).peak_bytes;
      if (ckpt == 0) {
        EXPECT_NEAR(derived_peak, expected, 0.01 * expected) << batch;
      } else {
        EXPECT_GE(derived_peak, 0.995 * expected) << batch << " " << ckpt;
        EXPECT_LE(derived_peak, 1.10 * expected) << batch << " " << ckpt;
      }
    }
  }
  // The base itself predicts otherwise: the check can fail.
  cost::PredictInput plain;
  plain.batch = 8;
  EXPECT_GT(naive.predict(plain).peak_bytes, 1.05 * a.predict(plain).peak_bytes);
  // The block alone is the key's own (exact bytes, along the lines through two batches).
  // (gpt-tiny's two blocks need alike in their backward, in the MLP's: the composition itself is
  // DerivedProfileTest.ABlockAloneIsTheBasesAndWhatTheProbedBlocksDifferBy.)
  ASSERT_TRUE(from_blocks.block_bytes.measured);
  for (double x : {2.0, 8.0}) {
    EXPECT_NEAR(from_blocks.block_bytes.kept(x), own.block_bytes.kept(x),
                1e-3 * own.block_bytes.kept(x))
        << x;
    EXPECT_NEAR(from_blocks.block_bytes.backward(x), own.block_bytes.backward(x),
                1e-3 * own.block_bytes.backward(x))
        << x;
  }
  // What the blocks keep differs (the naive attention keeps its probabilities): the check can fail.
  EXPECT_GT(derived.base->block_bytes.kept(8), 1.05 * own.block_bytes.kept(8));
}

// Collectives' costs for a predictor of two ranks whose peaks are compared: any will do.
cost::CollectiveModel any_collectives() {
  cost::CollectiveProfile measured;
  for (const char* op : {"all_reduce", "all_gather", "send_recv"}) {
    for (double bytes : {4096.0, 1e6}) measured.samples.push_back({op, bytes, 0.1 + bytes / 1e6});
  }
  return cost::CollectiveModel(measured);
}

// A derived point's collectives `a` are the measured point `q`'s (`b`).
void expect_same_collectives(const cost::CollectiveTally& a, const cost::CollectiveTally& b,
                             const cost::ProfilePoint& q) {
  EXPECT_GT(b.all_reduce_calls, 0);
  EXPECT_NEAR(a.all_reduce_calls, b.all_reduce_calls, 1e-9) << q.layers << " " << q.batch;
  EXPECT_NEAR(a.all_reduce_bytes, b.all_reduce_bytes, 1e-6 * b.all_reduce_bytes)
      << q.layers << " " << q.batch;
  EXPECT_NEAR(a.all_gather_calls, b.all_gather_calls, 1e-9) << q.layers << " " << q.batch;
  EXPECT_NEAR(a.all_gather_bytes, b.all_gather_bytes, 1e-6 * b.all_gather_bytes + 1e-9)
      << q.layers << " " << q.batch;
}

// The key of `full` (tp = 2) profiled whole, and derived from the blocks alone against `base`'s
// whole profile: every point both have counts the same collectives — the one-block and the deep
// steps, plain and checkpointed —, the peaks without checkpointing within 1%, the derived profile
// of tp = 2 with the key's own parameters. Returns the two whole profiles (the key's, the base's).
std::pair<cost::Profile, cost::Profile> expect_derived_as_whole(const ProfileRequest& full,
                                                                const ProfileRequest& base) {
  const cost::Profile own = measure_profile(full);
  ProfileRequest derived = full;
  derived.base = measure_profile(base);
  derived.base_knobs = base.knobs;
  const cost::Profile from_blocks = measure_profile(derived);
  EXPECT_EQ(from_blocks.tp, 2);
  EXPECT_EQ(from_blocks.shape.block_params, own.shape.block_params);
  size_t compared = 0;
  for (const cost::ProfilePoint& q : own.points) {
    for (const cost::ProfilePoint& p : from_blocks.points) {
      if (p.layers != q.layers || p.batch != q.batch || p.ckpt_blocks != q.ckpt_blocks ||
          p.micro_batches != q.micro_batches)
        continue;
      ++compared;
      expect_same_collectives(p.collectives, q.collectives, q);
    }
  }
  EXPECT_GE(compared, 6u);
  const cost::Predictor a(own, any_collectives()), b(from_blocks, any_collectives());
  for (int64_t batch : {2, 6, 8}) {
    cost::PredictInput in;
    in.batch = batch;
    in.tp = 2;
    EXPECT_NEAR(b.predict(in).peak_bytes, a.predict(in).peak_bytes, 0.01 * a.predict(in).peak_bytes)
        << batch;
  }
  return {own, *derived.base};
}

// Under tensor parallelism a derived key is one rank of its base's group: its block probed on a
// simulated group beside the base's (the same splits), its profile has the full profile's
// collectives at every point — an attention variant makes the base's — and predicts its peak.
TEST(BlockProbeTest, UnderTensorParallelismADerivedProfileCountsTheFullProfilesCollectives) {
  auto two_ranks = [](const char* attn) {
    ProfileRequest r = request(attn);
    r.knobs.set("tp", Value(int64_t{2}));
    return r;
  };
  expect_derived_as_whole(two_ranks("memory_efficient"), two_ranks("naive"));
}

// How tensor parallelism splits attention and the MLP changes a block's collectives: splitting
// q, k, v by inputs and the MLP's first product likewise (row_col) makes all-gathers and more
// all-reduces than Megatron's col_row. A key derived across the split from the blocks alone counts
// what its full profile counts at every point.
TEST(BlockProbeTest, ADerivedProfileAcrossTheSplitsCountsTheFullProfilesCollectives) {
  auto split = [](const char* how) {
    ProfileRequest r = request("naive");
    r.knobs.set("tp", Value(int64_t{2}));
    r.knobs.set("attn_shard", Value(std::string(how)));
    r.knobs.set("mlp_shard", Value(std::string(how)));
    return r;
  };
  const auto [own, base] = expect_derived_as_whole(split("row_col"), split("col_row"));
  // And the splits differ: the check can fail.
  EXPECT_GT(own.points.back().collectives.all_gather_calls,
            base.points.back().collectives.all_gather_calls);
}

// A derived key's request carries its base's knobs and its siblings to the worker that profiles
// it, and one without the base's knobs is refused rather than probed against a guessed base.
TEST(BlockProbeTest, AProfileRequestWithABaseCarriesItsKnobs) {
  ProfileRequest r = request("baddbmm");
  cost::Profile base;
  base.layers = 2;
  r.base = base;
  r.base_knobs = attention("naive");
  r.siblings = {attention("fused_qkv"), attention("memory_efficient")};
  const ProfileRequest back = ProfileRequest::from_json(r.to_json(), "test");
  ASSERT_TRUE(back.base.has_value());
  EXPECT_EQ(back.base_knobs.to_string(), attention("naive").to_string());
  ASSERT_EQ(back.siblings.size(), 2u);
  EXPECT_EQ(back.siblings[1].to_string(), attention("memory_efficient").to_string());
  std::string without = r.to_json();
  const size_t at = without.find("\"base_knobs\"");
  ASSERT_NE(at, std::string::npos);
  without.replace(at, std::string("\"base_knobs\"").size(), "\"other\"");
  EXPECT_THROW(ProfileRequest::from_json(without, "test"), Error);
}

}  // namespace
}  // namespace slapo::runners
