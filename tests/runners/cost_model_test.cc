// WorkloadCostModel and the profiles stored in a database: a stale one (another machine, another
// revision) is measured anew in a tuning run, and reused as it is when a recording is replayed
// (set_replaying: benchmark/tuner_efficiency.cc), which never measures.

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/config.h"
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

}  // namespace
}  // namespace slapo::runners
