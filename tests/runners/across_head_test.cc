// A profile derived across the head (ProfileRequest::head, cost/head_difference.h): a key that
// differs from its base only in the head (the fused LM loss) runs its own one-block steps where
// the base's ran, and the rest is the base's shifted by what they differ by — its bytes those the
// new key's full profile measures.

#include <gtest/gtest.h>

#include <stdlib.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/config.h"
#include "runners/profiler.h"
#include "runners/workload.h"
#include "tests/runners/tiny_workload.h"

namespace slapo::runners {
namespace {

// With `tp` > 1, one rank of a tensor-parallel group (the head split by the vocabulary).
Config head(bool fused, int64_t tp = 1) {
  Config c;
  c.set("fused_lm_loss", Value(fused));
  if (tp > 1) c.set("tp", Value(tp));
  return c;
}

// The full profile of the tiny workload with `knobs`, batches 2 to 8.
cost::Profile full_profile(const Config& knobs) {
  ProfileRequest r;
  r.workload = tiny_test_workload(2);
  r.knobs = knobs;
  r.batch_lo = 2;
  r.batch_hi = 8;
  return measure_profile(r);
}
cost::Profile full_profile(bool fused, int64_t tp = 1) { return full_profile(head(fused, tp)); }

// `base` (of `base_knobs`) derived across the head to `knobs`', through the request's JSON (as a
// job of two ranks receives it).
cost::Profile across_head(const cost::Profile& base, const Config& base_knobs,
                          const Config& knobs) {
  ProfileRequest r;
  r.workload = tiny_test_workload(2);
  r.knobs = knobs;
  r.batch_lo = 2;
  r.batch_hi = 8;
  r.base = base;
  r.base_knobs = base_knobs;
  r.head = true;
  return measure_profile(ProfileRequest::from_json(r.to_json(), "the test's request"));
}
cost::Profile across_head(const cost::Profile& base, bool fused, int64_t tp = 1) {
  return across_head(base, head(false, tp), head(fused, tp));
}

// The points by (layers, checkpointed blocks, micro-batches, batch).
using PointKey = std::tuple<int64_t, int64_t, int64_t, int64_t>;
std::map<PointKey, const cost::ProfilePoint*> by_key(const cost::Profile& p) {
  std::map<PointKey, const cost::ProfilePoint*> out;
  for (const cost::ProfilePoint& q : p.points)
    out[{q.layers, q.ckpt_blocks, q.micro_batches, q.batch}] = &q;
  return out;
}

TEST(AcrossTheHeadTest, AHeadDiffersFromItselfByNoByte) {
  const cost::Profile base = full_profile(false);
  const cost::Profile same = across_head(base, false);
  EXPECT_EQ(same.shape.epilogue_params, base.shape.epilogue_params);
  const auto a = by_key(base), b = by_key(same);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, q] : b) {
    ASSERT_TRUE(a.count(key));
    EXPECT_TRUE(q->derived);
    EXPECT_EQ(q->peak_bytes, a.at(key)->peak_bytes)
        << std::get<0>(key) << " block(s) x " << std::get<3>(key);
    EXPECT_TRUE(std::isfinite(q->step_ms) && q->step_ms > 0);
  }
  EXPECT_GT(same.profile_s, 0);
}

// The one-block steps' bytes are the new key's own, in one and in two micro-batches: their peaks to
// the byte those of its full profile — and the fused loss, which keeps no logits, needs less at
// the largest batch.
TEST(AcrossTheHeadTest, TheOneBlockBytesAreTheNewKeysOwnItsTimeTheBasesAndThePairedDifference) {
  const cost::Profile plain = full_profile(false), fused = full_profile(true);
  const cost::Profile derived = across_head(plain, true);
  EXPECT_EQ(derived.shape.epilogue_params, fused.shape.epilogue_params);
  ASSERT_EQ(derived.points.size(), plain.points.size());
  const auto a = by_key(derived), b = by_key(fused);
  int one_block = 0;
  for (const auto& [key, q] : a) {
    EXPECT_TRUE(q->derived);
    if (std::get<0>(key) != 1 || std::get<1>(key) != 0) continue;
    ++one_block;
    ASSERT_TRUE(b.count(key));
    EXPECT_EQ(q->peak_bytes, b.at(key)->peak_bytes)
        << std::get<2>(key) << " micro-batch(es) x " << std::get<3>(key);
  }
  EXPECT_EQ(one_block, 4);  // 1, 2 and 8 samples, and 4 in two micro-batches
  // Their time is the base's, and the optimizer's over the parameters the head has more, and in
  // one micro-batch what the head costs more there, paired (cost::paired_head_ms: the smaller of
  // two rounds' differences when they agree, else nothing) — never more than a step of the base.
  const auto base_points = by_key(plain);
  const double more_params = derived.shape.epilogue_params - plain.shape.epilogue_params;
  for (const auto& [key, q] : a) {
    if (std::get<0>(key) != 1 || std::get<1>(key) != 0) continue;
    const double base_ms =
        base_points.at(key)->step_ms + plain.optimizer_ms_per_param * more_params;
    if (std::get<2>(key) > 1)
      EXPECT_DOUBLE_EQ(q->step_ms, base_ms) << std::get<3>(key) << " samples, GPipe";
    else
      EXPECT_LT(std::abs(q->step_ms - base_ms), base_points.at(key)->step_ms)
          << std::get<3>(key) << " samples";
  }
  const PointKey largest = {1, 0, 1, 8};
  EXPECT_LT(a.at(largest)->peak_bytes, base_points.at(largest)->peak_bytes);
}

// The one-block steps of both keys meet each batch above the first on a heap made resident up to
// the base's peak there, not after an untimed step: the base's profile knows those peaks, and the
// untimed steps cost a quarter to a third of the key's profile (table 5's fused-loss key: 3.6-3.9 s
// against 2.8-2.9, docs/benchmarks.md). Each such step follows its touch in the trace.
TEST(AcrossTheHeadTest, TheOneBlockStepsMeetTheirBatchesOnAHeapMadeResident) {
  const cost::Profile base = full_profile(false);
  setenv("SLAPO_PROFILE_TRACE", "1", 1);
  ::testing::internal::CaptureStderr();
  across_head(base, true);
  const std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("SLAPO_PROFILE_TRACE");
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  int one_block_at_8 = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find(
            "profile trace: 1 block(s), 0 checkpointed, 1 micro-batch(es), 8 samples: ") != 0)
      continue;
    ++one_block_at_8;
    ASSERT_GT(i, 0u) << err;
    EXPECT_EQ(lines[i - 1].find("profile trace: the heap made resident for 8 samples: "), 0u)
        << err;
  }
  EXPECT_EQ(one_block_at_8, 4) << err;  // each key's, in two rounds
}

// Under tensor parallelism the plain head all-gathers its logits' parts and the fused loss
// all-reduces a few numbers a token: the derived profile counts, at every point, the collectives
// the new key's full profile counts — one block's measured, the deep variant's shifted by them —,
// and its one-block bytes are the new key's own.
// (`derived` against `full`: every point's collectives, the one-block points' peaks.)
void expect_the_collectives_and_one_block_bytes_of(const cost::Profile& derived,
                                                   const cost::Profile& full) {
  EXPECT_EQ(derived.tp, full.tp);
  EXPECT_EQ(derived.shape, full.shape);
  const auto a = by_key(derived), b = by_key(full);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [key, q] : a) {
    ASSERT_TRUE(b.count(key));
    const cost::CollectiveTally& want = b.at(key)->collectives;
    const std::string at = std::to_string(std::get<0>(key)) + " block(s), " +
                           std::to_string(std::get<1>(key)) + " checkpointed, " +
                           std::to_string(std::get<2>(key)) + " micro-batch(es) x " +
                           std::to_string(std::get<3>(key));
    EXPECT_NEAR(q->collectives.all_reduce_calls, want.all_reduce_calls, 1e-9) << at;
    EXPECT_NEAR(q->collectives.all_gather_calls, want.all_gather_calls, 1e-9) << at;
    EXPECT_NEAR(q->collectives.all_reduce_bytes, want.all_reduce_bytes,
                1e-9 * want.all_reduce_bytes + 1e-6)
        << at;
    EXPECT_NEAR(q->collectives.all_gather_bytes, want.all_gather_bytes,
                1e-9 * want.all_gather_bytes + 1e-6)
        << at;
    if (std::get<0>(key) == 1 && std::get<1>(key) == 0) {
      EXPECT_EQ(q->peak_bytes, b.at(key)->peak_bytes) << at;
    }
  }
}

TEST(AcrossTheHeadTest, UnderTensorParallelismTheCollectivesAreTheNewKeysOwn) {
  const cost::Profile plain = full_profile(false, 2), fused = full_profile(true, 2);
  expect_the_collectives_and_one_block_bytes_of(across_head(plain, true, 2), fused);
  // The base's differ: the check can fail (the logits' all-gather is gone with the fused loss).
  const cost::ProfilePoint& base_largest = *by_key(plain).at({1, 0, 1, 8});
  EXPECT_GT(base_largest.collectives.all_gather_bytes,
            by_key(fused).at({1, 0, 1, 8})->collectives.all_gather_bytes);
}

// How tensor parallelism splits the embedding and the LM head tied to it (embed_shard) changes
// nothing inside the blocks: a key of another split is derived across the ends like one of another
// head — its parameters outside the blocks (the embedding's, the head's, the tied ones) its own,
// every point's collectives and its one-block bytes those of its full profile.
TEST(AcrossTheHeadTest, AKeyOfAnotherEmbeddingSplitIsDerivedAcrossTheEnds) {
  auto split = [](const char* how) {
    Config c = head(false, 2);
    c.set("embed_shard", Value(std::string(how)));
    return c;
  };
  const cost::Profile vocab = full_profile(split("vocab"));
  for (const char* other : {"replicated", "hidden"}) {
    SCOPED_TRACE(other);
    const cost::Profile full = full_profile(split(other));
    // The splits differ where the check looks: in parameters outside the blocks or collectives.
    EXPECT_FALSE(full.shape == vocab.shape && by_key(full).at({1, 0, 1, 8})->collectives ==
                                                  by_key(vocab).at({1, 0, 1, 8})->collectives);
    const cost::Profile derived = across_head(vocab, split("vocab"), split(other));
    expect_the_collectives_and_one_block_bytes_of(derived, full);
    // And every deep step's bytes: the checkpointed ones measured (their first block keeps the
    // embeddings' output, which the split makes; at the largest batch and at one sample, the
    // least peak), the plain ones shifted.
    const auto a = by_key(derived), b = by_key(full);
    int checkpointed = 0;
    for (const auto& [key, q] : a) {
      if (std::get<0>(key) == 1) continue;
      checkpointed += std::get<1>(key) > 0;
      EXPECT_EQ(q->peak_bytes, b.at(key)->peak_bytes)
          << std::get<0>(key) << " blocks, " << std::get<1>(key) << " checkpointed, x "
          << std::get<3>(key);
    }
    EXPECT_EQ(checkpointed, 2);
  }
}

}  // namespace
}  // namespace slapo::runners
