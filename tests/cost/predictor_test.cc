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
//   T(b) = 10 + 2·b ms without checkpointing; each checkpointed block adds 5% of the step;
//   memory = 100 MB + b·(40 − n·8) MB, at least b·12 MB once every block is checkpointed (the
//   recompute of one block), and never under 115 MB (the optimizer step's own need).
constexpr double kMB = 1e6;
double true_step(int64_t b, int64_t n, int64_t m = 1) {
  return static_cast<double>(m) * (10 + 2.0 * b / m) * (1 + 0.05 * n);
}
double true_peak(int64_t b, int64_t n, int64_t m = 1) {
  const double micro = static_cast<double>(b) / m;
  return std::max(100 * kMB + std::max(micro * (40.0 - 8.0 * n), n == 4 ? micro * 12.0 : 0.0) * kMB,
                  115 * kMB);
}

Profile synthetic_profile() {
  Profile p;
  p.key_json = "{\"model\":\"synthetic\"}";
  p.fingerprint_json = "{}";
  p.layers = 4;
  // The points the profiler measures.
  for (auto [b, n] : std::vector<std::pair<int64_t, int64_t>>{
           {4, 0}, {8, 0}, {32, 0}, {32, 1}, {32, 4}, {1, 4}}) {
    p.points.push_back({b, n, true_step(b, n), true_peak(b, n)});
  }
  return p;
}

TEST(PredictorTest, RecoversTheCostsOfAWorkloadThatFollowsTheModel) {
  const Predictor predictor(synthetic_profile());
  EXPECT_NEAR(predictor.fit().recompute_share_per_block, 0.05, 1e-9);
  EXPECT_NEAR(predictor.fit().state_bytes, 100 * kMB, 1);
  EXPECT_NEAR(predictor.fit().act_bytes_per_sample, 40 * kMB, 1);
  EXPECT_NEAR(predictor.fit().saved_bytes_per_sample_block, 8 * kMB, 1);
  EXPECT_NEAR(predictor.fit().floor_bytes_per_sample, 12 * kMB, 1);
  EXPECT_NEAR(predictor.fit().least_bytes, 115 * kMB, 1);
  for (int64_t b : {1, 2, 8, 16, 24, 64}) {
    for (int64_t n : {0, 1, 2, 3, 4}) {
      for (int64_t m : {1, 2}) {
        const Prediction p = predictor.predict({b, n, m});
        EXPECT_NEAR(p.step_ms, true_step(b, n, m), 1e-6) << b << " " << n << " " << m;
        EXPECT_NEAR(p.peak_bytes, true_peak(b, n, m), 1) << b << " " << n << " " << m;
        EXPECT_NEAR(p.samples_per_s, b / (true_step(b, n, m) / 1000), 1e-6);
      }
    }
  }
  // The breakdown adds up.
  const Prediction p = predictor.predict({16, 2, 1});
  double ms = 0, bytes = 0;
  for (const auto& [name, v] : p.time_ms) ms += v;
  for (const auto& [name, v] : p.memory_bytes) bytes += v;
  EXPECT_NEAR(ms, p.step_ms, 1e-9);
  EXPECT_NEAR(bytes, p.peak_bytes, 1e-3);
}

TEST(PredictorTest, TimeFollowsTheProfiledBatchesWhereItIsNotAffine) {
  // A CPU whose time per sample falls from 10 ms (1 sample) to 6 ms (16 samples) and rises again.
  Profile p = synthetic_profile();
  p.points = {{1, 0, 10, 200 * kMB},
              {16, 0, 96, 800 * kMB},
              {64, 0, 512, 2600 * kMB},
              {64, 4, 614.4, 900 * kMB}};
  const Predictor predictor(p);
  EXPECT_NEAR(predictor.predict({16, 0, 1}).step_ms, 96, 1e-9);
  EXPECT_NEAR(predictor.predict({40, 0, 1}).step_ms, 96 + 24 * (512 - 96) / 48.0, 1e-9);
  EXPECT_NEAR(predictor.predict({32, 0, 2}).step_ms, 2 * 96, 1e-9);  // two micro-batches of 16
  EXPECT_NEAR(predictor.predict({64, 2, 1}).step_ms, 512 * 1.1, 1e-9);
}

TEST(PredictorTest, CalibrationRescalesAndNeverUnderPredictsAnObservedOom) {
  Predictor predictor(synthetic_profile());
  // This machine runs 10% slower than profiled, and a trial used 5% more memory than predicted.
  predictor.calibrate({16, 0, 1}, 1.1 * true_step(16, 0), 1.05 * true_peak(16, 0));
  ASSERT_GT(true_peak(8, 2), 115 * kMB);
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
  p.points.erase(p.points.begin(), p.points.begin() + 2);  // one batch size without checkpointing
  EXPECT_THROW(Predictor{p}, Error);
  Profile q = synthetic_profile();
  q.points.erase(q.points.begin() + 4, q.points.end());  // no point with every block checkpointed
  EXPECT_THROW(Predictor{q}, Error);
}

TEST(ProfileTest, RoundTripsThroughJson) {
  const Profile p = synthetic_profile();
  const Profile back = Profile::from_json(p.to_json(), "p");
  EXPECT_EQ(back.points, p.points);
  EXPECT_EQ(back.layers, 4);
  EXPECT_EQ(back.points.size(), 6u);
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
      if (true_peak(b, n) > 1000 * kMB)
        ++oom;
      else
        fitting.push_back(b / (true_step(b, n) / 1000));
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
