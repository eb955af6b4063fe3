// The head probe (runners/head_probe.h) and the profiles derived with it: what the one-block step
// of a key differs by from its base's when only the head differs (the fused LM loss), and a
// derived profile whose bytes are those the new key's full profile measured.

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/config.h"
#include "runners/head_probe.h"
#include "runners/profiler.h"
#include "runners/workload.h"

namespace slapo::runners {
namespace {

Workload tiny() {
  return Workload::from_json(
      R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 1, "steps": 2, "threads": 1})", "test");
}

Config head(bool fused) {
  Config c;
  c.set("fused_lm_loss", Value(fused));
  return c;
}

// The full profile of the tiny workload with or without the fused loss, batches 2 to 8.
cost::Profile full_profile(bool fused) {
  ProfileRequest r;
  r.workload = tiny();
  r.knobs = head(fused);
  r.batch_lo = 2;
  r.batch_hi = 8;
  return measure_profile(r);
}

// The one-block steps of no checkpointing, by (micro-batches, batch).
std::map<std::pair<int64_t, int64_t>, const cost::ProfilePoint*> one_block(const cost::Profile& p) {
  std::map<std::pair<int64_t, int64_t>, const cost::ProfilePoint*> out;
  for (const cost::ProfilePoint& q : p.points) {
    if (q.layers == 1 && q.ckpt_blocks == 0) out[{q.micro_batches, q.batch}] = &q;
  }
  return out;
}

TEST(HeadProbeTest, AHeadDiffersFromItselfByNoByte) {
  const cost::Profile base = full_profile(false);
  double params = -1;
  const std::vector<cost::HeadDifference> d =
      probe_head_differences(tiny(), head(false), head(false), base, &params);
  EXPECT_EQ(params, 0);
  EXPECT_EQ(d.size(), one_block(base).size());
  for (const cost::HeadDifference& x : d) {
    EXPECT_EQ(x.layers, 1);
    EXPECT_EQ(x.peak_bytes, 0) << x.micro_batches << " x " << x.batch;
    EXPECT_TRUE(std::isfinite(x.ms));
  }
}

// The probe's peaks are each model's own, though both models are alive at once: the bytes it
// finds between the heads are those between the two keys' full profiles, at every one-block
// point — and the fused loss, which keeps no logits, needs less at the largest batch.
TEST(HeadProbeTest, TheFusedLossDiffersByTheBytesItsFullProfileDoes) {
  const cost::Profile plain = full_profile(false), fused = full_profile(true);
  double params = -1;
  const std::vector<cost::HeadDifference> d =
      probe_head_differences(tiny(), head(false), head(true), plain, &params);
  EXPECT_EQ(params, fused.shape.epilogue_params - plain.shape.epilogue_params);
  const auto a = one_block(plain), b = one_block(fused);
  ASSERT_EQ(d.size(), a.size());
  for (const cost::HeadDifference& x : d) {
    const auto key = std::make_pair(x.micro_batches, x.batch);
    ASSERT_TRUE(a.count(key) && b.count(key));
    EXPECT_EQ(x.peak_bytes, b.at(key)->peak_bytes - a.at(key)->peak_bytes)
        << x.micro_batches << " x " << x.batch;
  }
  EXPECT_LT(d.back().peak_bytes, 0);  // micro-batches 2 come after 1: the largest of one is before
  bool largest = false;
  for (const cost::HeadDifference& x : d) {
    if (x.micro_batches == 1 && x.batch == 8) {
      largest = true;
      EXPECT_LT(x.peak_bytes, 0);
    }
  }
  EXPECT_TRUE(largest);
}

// A profile request across the head: the base shifted by the probe, every point marked derived,
// the one-block peaks the new key's full profile's.
TEST(HeadProbeTest, AProfileDerivedAcrossTheHeadHasTheOneBlockPeaksOfTheFullProfile) {
  const cost::Profile plain = full_profile(false), fused = full_profile(true);
  ProfileRequest r;
  r.workload = tiny();
  r.knobs = head(true);
  r.batch_lo = 2;
  r.batch_hi = 8;
  r.base = plain;
  r.base_knobs = head(false);
  r.head = true;
  // Through the request's JSON, as a job of two ranks receives it.
  const cost::Profile derived =
      measure_profile(ProfileRequest::from_json(r.to_json(), "the test's request"));
  ASSERT_EQ(derived.points.size(), plain.points.size());
  for (const cost::ProfilePoint& q : derived.points) EXPECT_TRUE(q.derived);
  const auto a = one_block(derived), b = one_block(fused);
  for (const auto& [key, q] : a) {
    ASSERT_TRUE(b.count(key));
    EXPECT_EQ(q->peak_bytes, b.at(key)->peak_bytes) << key.first << " x " << key.second;
  }
  EXPECT_GT(derived.profile_s, 0);
}

}  // namespace
}  // namespace slapo::runners
