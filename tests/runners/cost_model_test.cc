// WorkloadCostModel and the profiles stored in a database: a stale one (another machine, another
// revision) is measured anew in a tuning run, and reused as it is when a recording is replayed
// (set_replaying: benchmark/tuner_efficiency.cc), which never measures.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/metrics.h"
#include "db/database.h"
#include "runners/cost_model.h"
#include "runners/workload.h"

namespace slapo::runners {
namespace {

TEST(WorkloadCostModelTest, ReplayingReusesAStaleProfileAndNeverMeasures) {
  auto database = db::Database::in_memory();
  const Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "seq_len": 16, "batch_size": 4, "threads": 1})", "test");
  Config config;
  config.set("batch_size", Value(int64_t{4}));
  {
    WorkloadCostModel measured(w, database.get());
    const cost::Predicted p = measured.predict(config);
    ASSERT_TRUE(p.prediction) << p.why_not;
    ASSERT_GT(measured.profile_seconds(), 0);
  }
  // As if another machine, at another revision, had measured it.
  for (const db::StoredProfile& stored : database->profiles()) {
    nlohmann::json j = nlohmann::json::parse(stored.profile_json);
    j["code_revision"] = "abc123";
    j["fingerprint"]["cpu"] = "another CPU";
    database->put_profile(stored.key, j.dump());
  }

  WorkloadCostModel replay(w, database.get());
  replay.set_replaying(true);
  const cost::Predicted replayed = replay.predict(config);
  ASSERT_TRUE(replayed.prediction) << replayed.why_not;
  EXPECT_EQ(replay.profile_seconds(), 0.0);
  // A key the recording holds no profile of is said to be missing, not measured.
  Config other = config;
  other.set("attn", Value(std::string("fused_qkv")));
  const cost::Predicted missing = replay.predict(other);
  EXPECT_FALSE(missing.prediction);
  EXPECT_NE(missing.why_not.find("replaying: the recording holds no profile of"), std::string::npos)
      << missing.why_not;
  EXPECT_EQ(replay.profile_seconds(), 0.0);

  // A tuning run does not reuse the stale profile: it measures again.
  WorkloadCostModel live(w, database.get());
  const cost::Predicted fresh = live.predict(config);
  ASSERT_TRUE(fresh.prediction) << fresh.why_not;
  EXPECT_GT(live.profile_seconds(), 0);
}

// A trial of one attention variant that ran out of memory raises its family's memory predictions
// — the variants derived from one base share its memory fit, and so its error — and leaves the
// other variants' time alone.
TEST(WorkloadCostModelTest, AnOutOfMemoryTrialOfOneKeyRaisesItsFamilysMemory) {
  auto database = db::Database::in_memory();
  Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "seq_len": 16, "batch_size": 8, "threads": 1})", "test");
  w.memory_budget = 64 << 20;
  auto at = [](int64_t batch, const char* attn) {
    Config c;
    c.set("batch_size", Value(batch));
    c.set("attn", Value(std::string(attn)));
    return c;
  };
  WorkloadCostModel model(w, database.get());
  const cost::Prediction naive = *model.predict(at(4, "naive")).prediction;
  const cost::Prediction fused = *model.predict(at(4, "fused_qkv")).prediction;
  // naive measured 30% slower than predicted, at its predicted peak.
  TrialResult slow;
  slow.status = TrialStatus::kOk;
  slow.metrics[metric::kStepMsMedian] = 1.3 * naive.step_ms;
  slow.metrics[metric::kPeakBytes] = naive.peak_bytes;
  model.calibrate(at(4, "naive"), slow);
  EXPECT_NEAR(model.predict(at(4, "naive")).prediction->step_ms / naive.step_ms, 1.3, 1e-9);
  EXPECT_EQ(model.predict(at(4, "fused_qkv")).prediction->step_ms, fused.step_ms);
  EXPECT_EQ(model.predict(at(4, "fused_qkv")).prediction->peak_bytes, fused.peak_bytes);
  // fused_qkv ran out of memory at 4 samples where predicted far under the budget: from now on
  // both variants are predicted over it there.
  TrialResult oom;
  oom.status = TrialStatus::kOom;
  model.calibrate(at(4, "fused_qkv"), oom);
  EXPECT_GT(model.predict(at(4, "fused_qkv")).prediction->peak_bytes, w.memory_budget);
  EXPECT_GT(model.predict(at(4, "naive")).prediction->peak_bytes, w.memory_budget);
  // A variant profiled after it takes the same factor (its own peak may differ a little).
  const double factor = model.predict(at(4, "fused_qkv")).prediction->peak_bytes / fused.peak_bytes;
  EXPECT_GT(factor, 1.0);
  const double baddbmm = WorkloadCostModel(w, database.get())  // the stored profile, uncalibrated
                             .predict(at(4, "baddbmm"))
                             .prediction->peak_bytes;
  EXPECT_NEAR(model.predict(at(4, "baddbmm")).prediction->peak_bytes / baddbmm, factor, 1e-9);
}

}  // namespace
}  // namespace slapo::runners
