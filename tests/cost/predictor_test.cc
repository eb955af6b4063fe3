// The cost model without LibTorch: a profile of a synthetic workload whose costs are known exactly,
// the predictor's fit and composition, calibration, and the planner over a compiled space.

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "cost/planner.h"
#include "cost/predictor.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace slapo::cost {
namespace {

// A workload of 4 blocks whose step and memory follow the model exactly:
//   step = 10 + 2·b + 0.5·n·b ms; memory = 100 MB + b·(40 − n·8) MB, at least b·12 MB + state
//   once every block is checkpointed (the recompute of one block).
constexpr double kMB = 1e6;
double true_step(int64_t b, int64_t n) { return 10 + 2.0 * b + 0.5 * n * b; }
double true_peak(int64_t b, int64_t n) {
  return 100 * kMB + std::max(b * (40.0 - 8.0 * n), n == 4 ? b * 12.0 : 0.0) * kMB;
}

Profile synthetic_profile() {
  Profile p;
  p.key_json = "{\"model\":\"synthetic\"}";
  p.fingerprint_json = "{}";
  p.layers = 4;
  for (auto [b, n] : std::vector<std::pair<int64_t, int64_t>>{{4, 0}, {32, 0}, {32, 1}, {32, 4}}) {
    p.points.push_back({b, n, true_step(b, n), true_peak(b, n)});
  }
  return p;
}

TEST(PredictorTest, RecoversTheCostsOfAWorkloadThatFollowsTheModel) {
  const Predictor predictor(synthetic_profile());
  EXPECT_NEAR(predictor.fit().fixed_ms, 10, 1e-9);
  EXPECT_NEAR(predictor.fit().compute_ms_per_sample, 2, 1e-9);
  EXPECT_NEAR(predictor.fit().recompute_ms_per_sample_block, 0.5, 1e-9);
  EXPECT_NEAR(predictor.fit().state_bytes, 100 * kMB, 1);
  EXPECT_NEAR(predictor.fit().saved_bytes_per_sample_block, 8 * kMB, 1);
  for (int64_t b : {1, 8, 16, 64}) {
    for (int64_t n : {0, 1, 2, 3, 4}) {
      const Prediction p = predictor.predict({b, n, 1});
      EXPECT_NEAR(p.step_ms, true_step(b, n), 1e-6) << b << " " << n;
      EXPECT_NEAR(p.peak_bytes, true_peak(b, n), 1) << b << " " << n;
      EXPECT_NEAR(p.samples_per_s, b / (true_step(b, n) / 1000), 1e-6);
    }
  }
  // The breakdown adds up.
  const Prediction p = predictor.predict({16, 2, 1});
  double ms = 0, bytes = 0;
  for (const auto& [name, v] : p.time_ms) ms += v;
  for (const auto& [name, v] : p.memory_bytes) bytes += v;
  EXPECT_NEAR(ms, p.step_ms, 1e-9);
  EXPECT_NEAR(bytes, p.peak_bytes, 1e-3);
  // Micro-batches: the activations of one micro-batch at a time.
  EXPECT_NEAR(predictor.predict({16, 0, 4}).peak_bytes, true_peak(4, 0), 1);
}

TEST(PredictorTest, CalibrationRescalesAndNeverUnderPredictsAnObservedOom) {
  Predictor predictor(synthetic_profile());
  // This machine runs 10% slower than profiled, and a trial used 5% more memory than predicted.
  predictor.calibrate({16, 0, 1}, 1.1 * true_step(16, 0), 1.05 * true_peak(16, 0));
  EXPECT_NEAR(predictor.predict({8, 2, 1}).step_ms, 1.1 * true_step(8, 2), 1e-6);
  EXPECT_NEAR(predictor.predict({8, 2, 1}).peak_bytes, 1.05 * true_peak(8, 2), 1);
  // An over-prediction never lowers the memory (an under-prediction is an out-of-memory trial).
  predictor.calibrate({16, 0, 1}, 1.1 * true_step(16, 0), 0.5 * true_peak(16, 0));
  EXPECT_NEAR(predictor.predict({8, 2, 1}).peak_bytes, 1.05 * true_peak(8, 2), 1);
  // A trial that ran out of memory under 500 MB is predicted over 500 MB from now on.
  const double before = predictor.predict({32, 0, 1}).peak_bytes;
  ASSERT_LT(before, 2000 * kMB);
  predictor.calibrate_oom({32, 0, 1}, 2000 * kMB);
  EXPECT_GT(predictor.predict({32, 0, 1}).peak_bytes, 2000 * kMB);
}

TEST(PredictorTest, AProfileWithoutWhatTheModelNeedsIsRefused) {
  Profile p = synthetic_profile();
  p.points.erase(p.points.begin());  // one batch size without checkpointing left
  EXPECT_THROW(Predictor{p}, Error);
  Profile q = synthetic_profile();
  q.points.pop_back();  // no point with every block checkpointed
  EXPECT_THROW(Predictor{q}, Error);
}

TEST(ProfileTest, RoundTripsThroughJson) {
  const Profile p = synthetic_profile();
  const Profile back = Profile::from_json(p.to_json(), "p");
  EXPECT_EQ(back.points, p.points);
  EXPECT_EQ(back.layers, 4);
  EXPECT_EQ(back.key_json, p.key_json);
  EXPECT_THROW(Profile::from_json("{\"points\": 3}", "p.json"), Error);
}

TEST(PlannerTest, RanksTheWholeSpaceAndLeavesOutWhatDoesNotFit) {
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space::parse_space(
      "[knobs]\nbatch_size = { pow2 = [1, 64] }\nckpt_layers = { range = [0, 4] }\n", "s.toml"));
  const Predictor predictor(synthetic_profile());
  const ConfigPredictor predict = [&](const Config& c) {
    Predicted out;
    const int64_t b = std::get<int64_t>(*c.find("batch_size"));
    if (b == 2) {
      out.why_not = "batch 2 is not predicted";
      return out;
    }
    out.prediction = predictor.predict({b, std::get<int64_t>(*c.find("ckpt_layers")), 1});
    return out;
  };
  PlanOptions options;
  options.top = 3;
  options.memory_budget_bytes = 1000 * kMB;
  const Plan plan = cost::plan(compiled, predict, options);
  EXPECT_EQ(plan.unpredictable, 5u);
  EXPECT_EQ(plan.unpredictable_reason, "batch 2 is not predicted");
  EXPECT_EQ(plan.considered, 30u);
  // The brute-force answer: the best samples/s among the configurations that fit.
  uint64_t oom = 0;
  std::vector<double> fitting;
  for (int64_t b : {1, 4, 8, 16, 32, 64}) {
    for (int64_t n = 0; n <= 4; ++n) {
      if (true_peak(b, n) > 1000 * kMB) ++oom;
      else fitting.push_back(b / (true_step(b, n) / 1000));
    }
  }
  std::sort(fitting.rbegin(), fitting.rend());
  EXPECT_EQ(plan.predicted_oom, oom);
  ASSERT_EQ(plan.top.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(plan.top[i].objective, fitting[i], 1e-6);
  EXPECT_LE(plan.top[0].prediction.peak_bytes, 1000 * kMB);
  options.objective = {"loss", false};
  EXPECT_THROW(cost::plan(compiled, predict, options), Error);
}

}  // namespace
}  // namespace slapo::cost
