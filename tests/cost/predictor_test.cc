// The cost model without LibTorch: a profile of a synthetic workload whose costs are known exactly,
// the predictor's fit and composition (one rank, pipeline stages, data and tensor parallelism),
// calibration, the collectives' fit, the cut-point search and the planner over a compiled space.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cost/collectives.h"
#include "cost/cut_search.h"
#include "cost/planner.h"
#include "cost/predictor.h"
#include "space/compiled_space.h"
#include "space/space_file.h"
#include "synthetic_workload.h"

namespace slapo::cost {
namespace {

using testing::kLayers;
using testing::kMB;
const testing::SyntheticWorkload kWorkload;
double block_ms(double x) { return kWorkload.block_ms(x); }
double outside_ms(double x) { return kWorkload.outside_ms(x); }
double optimizer_ms(double blocks) { return testing::SyntheticWorkload::optimizer_ms(blocks); }
double true_step(int64_t layers, int64_t x, int64_t k) { return kWorkload.step(layers, x, k); }
double true_peak(int64_t layers, int64_t x, int64_t k) { return kWorkload.peak(layers, x, k); }
Profile synthetic_profile(int64_t layers = kLayers) { return kWorkload.profile(layers); }

using testing::synthetic_collectives;

// A configuration of one rank: `batch` samples, `ckpt` blocks checkpointed, `micro` micro-batches.
PredictInput at(int64_t batch, int64_t ckpt = 0, int64_t micro = 1) {
  PredictInput in;
  in.batch = batch;
  in.ckpt_blocks = ckpt;
  in.micro_batches = micro;
  return in;
}

TEST(PredictorTest, RecoversTheCostsOfABlockAndOfTheRest) {
  const Predictor predictor(synthetic_profile());
  const Predictor::Fit& f = predictor.fit();
  EXPECT_NEAR(f.recompute_share, 0.3, 1e-9);
  EXPECT_NEAR(f.block_state, 16 * kMB, 1);
  EXPECT_NEAR(f.outside_state, 40 * kMB, 1);
  EXPECT_NEAR(f.block_act, 10 * kMB, 1);
  EXPECT_NEAR(f.outside_act, 30 * kMB, 1);
  EXPECT_NEAR(f.ckpt_block_kept, 2 * kMB, 1);
  for (double x : {1.0, 3.0, 16.0, 40.0}) {
    EXPECT_NEAR(predictor.block_ms(x), block_ms(x), 1e-9) << x;
    EXPECT_NEAR(predictor.outside_ms(x), outside_ms(x), 1e-9) << x;
  }
}

// A profile's points are single timed steps: one of the deep variant's four above one sample, 6%
// slow (a hiccup of the machine), is read off the repeated-median line through them — the true
// step at every batch, its own included, where the polyline through the points is 6% off there.
TEST(PredictorTest, AProfileWithAStepOfNoTimeIsRefused) {
  Profile profile = synthetic_profile();
  for (ProfilePoint& q : profile.points) {
    if (q.layers == kLayers && q.batch == 4 && q.ckpt_blocks == 0) q.step_ms = -4.9;
  }
  try {
    const Predictor predictor(profile);
    FAIL() << "predicted from a profile with a step of negative time";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at a batch of 4 takes -4.9 ms"), std::string::npos)
        << e.what();
  }
}

TEST(PredictorTest, OneSlowStepOfTheDeepVariantIsReadOffTheLineThroughItsBatches) {
  const Predictor predictor(kWorkload.profile_with_one_slow_deep_step(11));
  for (int64_t b : {2, 4, 8, 11, 16, 20, 32}) {
    EXPECT_NEAR(predictor.predict(at(b, 0, 1)).step_ms, true_step(kLayers, b, 0), 1e-6) << b;
  }
}

// The recompute is what the checkpointed step costs more than the plain one as the line reads it:
// a slow plain step at the batch both were measured at does not make checkpointing cheap.
TEST(PredictorTest, ASlowPlainStepWhereTheCheckpointedOneRanLeavesTheRecomputeAsItIs) {
  const Predictor predictor(kWorkload.profile_with_one_slow_deep_step(32));
  for (int64_t b : {8, 16, 32, 64}) {
    for (int64_t n : {int64_t{1}, kLayers}) {
      EXPECT_NEAR(predictor.predict(at(b, n, 1)).step_ms, true_step(kLayers, b, n), 1e-6)
          << b << " " << n;
    }
  }
}

TEST(PredictorTest, OneRankIsTheProfiledModelAtAnyBatchCheckpointingAndMicroBatches) {
  const Predictor predictor(synthetic_profile());
  for (int64_t b : {1, 2, 8, 16, 24, 64}) {
    for (int64_t n = 0; n <= kLayers; ++n) {
      for (int64_t m : {1, 2}) {
        if (b % m) continue;
        const Prediction p = predictor.predict(at(b, n, m));
        const int64_t x = b / m;
        // m micro-batches, the optimizer once.
        const double step =
            m * (true_step(kLayers, x, n) - optimizer_ms(kLayers)) + optimizer_ms(kLayers);
        EXPECT_NEAR(p.step_ms, step, 1e-6) << b << " " << n << " " << m;
        EXPECT_NEAR(p.peak_bytes, true_peak(kLayers, x, n), 1) << b << " " << n << " " << m;
        EXPECT_NEAR(p.samples_per_s, b / (step / 1000), 1e-6);
      }
    }
  }
  // The breakdown adds up.
  const Prediction p = predictor.predict(at(16, 2, 2));
  double ms = 0, bytes = 0;
  for (const auto& [name, v] : p.time_ms) ms += v;
  for (const auto& [name, v] : p.memory_bytes) bytes += v;
  EXPECT_NEAR(ms, p.step_ms, 1e-9);
  EXPECT_NEAR(bytes, p.peak_bytes, 1e-3);
}

TEST(PredictorTest, ADeeperModelIsComposedFromTheBlocks) {
  const Predictor predictor(synthetic_profile(/*layers=*/12));
  const Prediction p = predictor.predict(at(8, 3, 1));
  EXPECT_NEAR(p.step_ms, true_step(12, 8, 3), 1e-6);
  EXPECT_NEAR(p.peak_bytes, true_peak(12, 8, 3), 1);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("12 blocks composed from variants of 1 and 4"), std::string::npos);
}

// A prediction past the largest profiled batch says it is extrapolated; one inside does not.
TEST(PredictorTest, APredictionPastTheProfiledBatchesSaysSo) {
  const Predictor predictor(synthetic_profile());
  double largest = 0;
  for (const ProfilePoint& q : synthetic_profile().points)
    largest = std::max(largest, double(q.batch));
  const auto extrapolated = [](const Prediction& p) {
    return std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
      return n.find("extrapolated past the largest profiled batch") != std::string::npos;
    });
  };
  const int64_t inside = static_cast<int64_t>(largest);
  EXPECT_FALSE(extrapolated(predictor.predict(at(inside, 0, 1))));
  const Prediction past = predictor.predict(at(2 * inside, 0, 1));
  EXPECT_TRUE(extrapolated(past));
  EXPECT_NE(past.notes.back().find(std::to_string(2 * inside) + " samples a micro-batch"),
            std::string::npos)
      << past.notes.back();
  // Per micro-batch: twice the batch in two micro-batches is inside again.
  EXPECT_FALSE(extrapolated(predictor.predict(at(2 * inside, 0, 2))));
}

// A head whose buffer stops growing past 8 samples (the fused LM loss's chunk of logits) bends the
// deep variant's peaks: a line through them all passes under the middle ones, where a budget's
// edge may lie. The whole model on one stage is predicted no lower than the measured peaks there.
TEST(PredictorTest, OneStageIsNoLowerThanTheDeepVariantsMeasuredPeaksWhereTheyBend) {
  Profile profile = synthetic_profile();
  auto head_buffer = [](double x) { return 3 * kMB * std::min(x, 8.0); };
  for (ProfilePoint& q : profile.points) {
    if (q.layers == kLayers && q.ckpt_blocks == 0) q.peak_bytes += head_buffer(q.batch);
  }
  const Predictor bent(profile), straight(synthetic_profile());
  // At the measured batches: the measured peak (the line alone is below it at 11).
  for (const ProfilePoint& q : profile.points) {
    if (q.layers != kLayers || q.ckpt_blocks != 0 || q.batch == 1) continue;
    EXPECT_GE(bent.predict(at(q.batch)).peak_bytes, q.peak_bytes - 1) << q.batch;
  }
  EXPECT_NEAR(bent.predict(at(11)).peak_bytes, true_peak(kLayers, 11, 0) + head_buffer(11), 1);
  // Between them, at least the measured curve's interpolation; beyond them, the nearest point's
  // excess over the line.
  const double at11 = true_peak(kLayers, 11, 0) + head_buffer(11);
  const double at32 = true_peak(kLayers, 32, 0) + head_buffer(32);
  EXPECT_GE(bent.predict(at(16)).peak_bytes, at11 + (at32 - at11) * 5 / 21 - 1);
  // A straight curve adds nothing.
  EXPECT_NEAR(straight.predict(at(16)).peak_bytes, true_peak(kLayers, 16, 0), 1);
  for (const auto& [x, excess] : straight.fit().deep_bend) EXPECT_NEAR(excess, 0, 1) << x;
}

// A head whose buffer stops growing where it fills (the fused LM loss's chunk of logits) bends the
// peaks of both variants under the line through the two largest batches (11 and 32) below that,
// and where it fills between the two, the line passes under the curve there. Told where it fills
// (ModelShape::loss_chunk_samples), the whole model on one rank is predicted on the curve from the
// smallest batch profiled above one sample (4) to the largest; not told, never under it where it
// fills below the two (between them it is: docs/cost-model.md, blind spots).
TEST(PredictorTest, AHeadsChunkIsFollowedWhereItFillsAndNeverPredictedUnder) {
  for (double fill : {10.0, 24.0}) {
    auto buffer = [&](double x) { return 3 * kMB * std::min(x, fill); };
    Profile blind = synthetic_profile();
    for (ProfilePoint& q : blind.points) {
      if (q.ckpt_blocks == 0 && q.micro_batches == 1) q.peak_bytes += buffer(q.batch);
    }
    Profile told = blind;
    told.shape.loss_chunk_samples = fill;
    const Predictor with(told), without(blind);
    for (int64_t x : {4, 5, 8, 10, 11, 12, 16, 20, 24, 30, 32}) {
      const double truth = true_peak(kLayers, x, 0) + buffer(x);
      EXPECT_NEAR(with.predict(at(x)).peak_bytes, truth, 1e-6 * truth) << fill << " " << x;
      if (fill < 11) {
        EXPECT_GE(without.predict(at(x)).peak_bytes, truth * (1 - 1e-6)) << fill << " " << x;
      }
    }
  }
}

// A step whose peak is its optimizer step's (a small batch of a shallow variant) says nothing of
// the activations: the blocks and the rest are read off the other batches — with one batch where
// both variants peak in their activations (the profiler's), a block's state from the one-sample
// peaks' difference; with two, the line through their differences.
TEST(PredictorTest, AStepThatPeaksInItsOptimizerStepSaysNothingOfTheActivations) {
  testing::SyntheticWorkload w;
  w.optimizer_peak_mb = 200;  // over one block's 4 samples (160 MB), under four blocks' (280)
  Profile with_middle = w.profile();
  with_middle.points.push_back(w.point(1, 11, 0));
  for (const Profile& profile : {w.profile(), with_middle}) {
    const Predictor predictor(profile);
    EXPECT_NEAR(predictor.fit().block_act, 10 * kMB, 1);
    EXPECT_NEAR(predictor.fit().block_state, 16 * kMB, 1);
    EXPECT_NEAR(predictor.fit().outside_act, 30 * kMB, 1);
    for (int64_t b : {8, 16, 24, 64}) {
      for (int64_t k : {int64_t{0}, int64_t{2}, kLayers})
        EXPECT_NEAR(predictor.predict(at(b, k)).peak_bytes, w.peak(kLayers, b, k), 1)
            << b << " " << k;
    }
  }
}

// `w`'s profile with an optimizer that makes 64 bytes an element of its largest parameter at its
// step (128 MB for the 2e6-element embedding and head; a block's largest holds 0.25e6), as
// measured on one flat tensor.
Profile with_optimizer_temporaries(testing::SyntheticWorkload& w) {
  w.optimizer_peak_mb = 128;
  Profile profile = w.profile();
  profile.shape.largest_block_tensor = 0.25e6;
  profile.shape.largest_prologue_tensor = profile.shape.largest_epilogue_tensor = 2e6;
  profile.optimizer_temp_bytes_per_element = 64;
  return profile;
}

// `batch` samples, the first `ckpt` blocks checkpointed, over four pipeline stages of a block each.
PredictInput four_stages(int64_t batch, int64_t ckpt) {
  PredictInput in = at(batch, ckpt);
  in.pp = 4;
  in.cuts = {1, 2, 3};
  return in;
}

// The optimizer step's temporaries are of one parameter at a time: a pipeline stage's least peak
// is its state and the temporaries of the largest parameter it holds — the embedding's whole on
// the first stage, a block weight's on a stage of blocks alone. A profile that measured no
// temporaries keeps the whole model's ratio of the least peak to the state (which put llama-mini's
// first of two stages 6.9% under its trials).
TEST(PredictorTest, AStagesLeastPeakIsItsStateAndItsLargestParametersTemporaries) {
  testing::SyntheticWorkload w;
  const Predictor predictor(with_optimizer_temporaries(w), synthetic_collectives());
  // One rank: the whole model's least peak, as measured.
  EXPECT_NEAR(predictor.predict(at(1, kLayers)).peak_bytes, w.peak(kLayers, 1, kLayers), 1);
  // Four stages of a block each, every block checkpointed, one sample.
  const PredictInput in = four_stages(1, kLayers);
  const Prediction p = predictor.predict(in);
  ASSERT_EQ(p.stages.size(), 4u);
  const double first_state = (16 + 40 * 2 / 2.5) * kMB;  // a block, the embedding's share
  EXPECT_NEAR(p.stages[0].peak_bytes, first_state + 128 * kMB, 1);
  EXPECT_EQ(p.stages[0].peak_at, PeakMoment::kOptimizerStep);
  EXPECT_NEAR(p.stages[1].peak_bytes, (16 + 16) * kMB, 1);  // an eighth of the embedding's
  // The last: a block, the head's share (tied: the whole of the rest), the head's temporaries.
  EXPECT_NEAR(p.stages[3].peak_bytes, (16 + 40 + 128) * kMB, 1);
  EXPECT_NEAR(p.peak_bytes, p.stages[3].peak_bytes, 1);
  // Without the largest parameters counted: the whole model's ratio of least peak to state.
  const Predictor by_ratio(w.profile(), synthetic_collectives());
  const double ratio =
      w.peak(kLayers, 1, kLayers) / testing::SyntheticWorkload::state_bytes(kLayers);
  EXPECT_NEAR(by_ratio.predict(in).stages[0].peak_bytes, ratio * first_state, 1);
  EXPECT_LT(by_ratio.predict(in).stages[0].peak_bytes, first_state + 128 * kMB);
}

// The state fitted outside the blocks also holds what the head keeps whatever the batch (the
// fused LM loss's chunk of logits, a tied weight's gradient as its two uses add up): gone by the
// optimizer step, which holds the parameters, their gradients and the optimizer's state alone —
// counted at a block's bytes a parameter. With the fitted state the last stage's optimizer step
// was over by the head's buffer (gpt-neo-125m: 15.7 MB, 1.6%).
TEST(PredictorTest, TheOptimizerStepHoldsTheParametersStateNotWhatTheHeadKeeps) {
  testing::SyntheticWorkload w;
  w.head_buffer_mb = 20;
  const Predictor predictor(with_optimizer_temporaries(w), synthetic_collectives());
  // The buffer is in the state fitted outside the blocks (40 MB of parameters' state).
  EXPECT_NEAR(predictor.fit().outside_state, (40 + 20) * kMB, 1);
  // The whole model on one rank, one sample, every block checkpointed: as measured.
  EXPECT_NEAR(predictor.predict(at(1, kLayers)).peak_bytes, w.peak(kLayers, 1, kLayers), 1);
  // The last of four stages: a block's state, the head's (the rest of the parameters' state), its
  // temporaries — not the buffer.
  const Prediction p = predictor.predict(four_stages(1, kLayers));
  ASSERT_EQ(p.stages.size(), 4u);
  EXPECT_EQ(p.stages[3].peak_at, PeakMoment::kOptimizerStep);
  EXPECT_NEAR(p.stages[3].peak_bytes, (16 + 40 + 128) * kMB, 1);
  // At the head, the buffer is there: a stage whose activations peak above the optimizer step
  // holds it.
  const Prediction q = predictor.predict(four_stages(64, 0));
  EXPECT_EQ(q.stages[3].peak_at, PeakMoment::kLossBackward);
  EXPECT_GT(q.stages[3].peak_bytes, (16 + 40 + 20 + 64 * (10 + 30)) * kMB - 1);
}

// Under data parallelism the gradients are averaged a bucket at a time, each bucket packed into a
// tensor of its own beside the state (schedule/runtime/data_parallel.h): where the optimizer's
// temporaries are fewer (a fused optimizer), that moment sets the peak.
TEST(PredictorTest, UnderDataParallelismAPackedBucketOfGradientsBesideTheStateIsAMoment) {
  testing::SyntheticWorkload w;
  w.outside_act_mb = 4;  // a sample's activations under a bucket of the gradients
  Profile profile = w.profile();
  profile.optimizer_temp_bytes_per_element = 0;  // a fused optimizer: no temporaries
  profile.shape.largest_block_tensor = 0.25e6;
  profile.shape.largest_prologue_tensor = profile.shape.largest_epilogue_tensor = 2e6;
  const double state = testing::SyntheticWorkload::state_bytes(kLayers);
  {
    const Predictor predictor(profile, synthetic_collectives());
    // One rank of one sample, every block checkpointed: below the state and a bucket (the head
    // keeps less than a block here: the recompute's moment, as composed — docs/cost-model.md).
    const Prediction alone = predictor.predict(at(1, kLayers));
    EXPECT_LT(alone.peak_bytes, state + 26 * kMB);
    EXPECT_NE(alone.peak_at, PeakMoment::kGradientAveraging);
    // Two ranks of one sample each: 16 bytes a parameter (6.5e6 of them: the state) and their
    // 26 MB of gradients in one bucket.
    PredictInput two = at(2, kLayers);
    two.dp = 2;
    const Prediction p = predictor.predict(two);
    EXPECT_NEAR(p.peak_bytes, state + 4 * 6.5e6, 1);
    EXPECT_EQ(p.peak_at, PeakMoment::kGradientAveraging);
    EXPECT_STREQ(to_string(p.peak_at), "the gradients' averaging (a bucket packed)");
    // Sixteen samples a rank: their activations, as on one rank.
    PredictInput more = at(32, 0);
    more.dp = 2;
    EXPECT_NEAR(predictor.predict(more).peak_bytes, w.peak(kLayers, 16, 0), 1);
    EXPECT_EQ(predictor.predict(more).peak_at, PeakMoment::kLossBackward);
  }
  // More gradients than a bucket (an embedding of 10e6 parameters: 14.5e6 in all, 58 MB of
  // gradients): the bucket's 25 MiB beside 16 bytes a parameter (a block's state a parameter);
  // a gradient larger than a bucket (the embedding's 32 MB): its bytes.
  profile.shape.prologue_params = 10e6;
  PredictInput two = at(2, kLayers);
  two.dp = 2;
  EXPECT_NEAR(Predictor(profile, synthetic_collectives()).predict(two).peak_bytes,
              16 * 14.5e6 + (25 << 20), 1);
  profile.shape.largest_prologue_tensor = 8e6;
  EXPECT_NEAR(Predictor(profile, synthetic_collectives()).predict(two).peak_bytes,
              16 * 14.5e6 + 4 * 8e6, 1);
}

// A head that keeps less than a block (the fused LM loss): with the first blocks checkpointed, the
// peak is either at the head or when the top checkpointed block is recomputed — by then the plain
// blocks above it and the loss have run backward — not both at once. The head's buffer that does
// not grow with the batch is gone by then, which the model does not know: it over-predicts those
// peaks by at most that buffer, never under.
TEST(PredictorTest, WithTheFirstBlocksCheckpointedThePeakIsAtTheHeadOrAtTheTopRecompute) {
  testing::SyntheticWorkload w;
  w.outside_act_mb = 4;    // under a block's 10
  w.head_buffer_mb = 200;  // every block checkpointed at the largest profiled batch: at the head
  const Predictor predictor(w.profile());
  const Predictor::Fit& f = predictor.fit();
  const double d = static_cast<double>(kLayers);
  for (int64_t b : {8, 16, 64}) {
    EXPECT_NEAR(predictor.predict(at(b)).peak_bytes, w.peak(kLayers, b, 0), 1) << b;
    for (int64_t k = 1; k <= kLayers; ++k) {
      const double c = static_cast<double>(k), x = static_cast<double>(b);
      const double at_head = (d - c) * f.block_act + c * f.ckpt_block_kept + f.outside_act;
      const double recomputing = c * f.ckpt_block_kept + f.block_act;
      const double p = predictor.predict(at(b, k)).peak_bytes;
      EXPECT_NEAR(p, d * f.block_state + f.outside_state + x * std::max(at_head, recomputing), 1)
          << b << " " << k;
      EXPECT_GE(p, w.peak(kLayers, b, k) - 1) << b << " " << k;
      EXPECT_LE(p, w.peak(kLayers, b, k) + w.head_buffer_mb * kMB + 1) << b << " " << k;
    }
  }
}

TEST(PredictorTest, PipelineStagesDataParallelismAndTheirMessages) {
  const Predictor predictor(synthetic_profile(), synthetic_collectives());
  // Two stages of two blocks, 4 micro-batches of 4 samples, 1F1B.
  PredictInput in = at(16, 0, 4);
  in.pp = 2;
  in.cuts = {2};
  const double x = 4, message = 0.1 + 1000 * x / 1e6;  // one sample's hidden states: 1000 bytes
  const double t0 = 2 * block_ms(x) + 0.5 * x + message;
  const double t1 = 2 * block_ms(x) + outside_ms(x) - 0.5 * x + message;
  // The optimizer of the last stage (2 blocks + the head) and the tied gradient's all-reduce.
  const double tail = 1e-6 * (2e6 + 2.5e6) + (0.1 + 4 * 2e6 / 1e6);
  const double loss = 0.1 + 8 / 1e6;
  const Prediction p = predictor.predict(in);
  EXPECT_NEAR(p.step_ms, t0 + t1 + 3 * std::max(t0, t1) + tail + loss, 1e-9);
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_NEAR(p.stages[0].micro_batch_ms, t0, 1e-9);
  // 1F1B: two micro-batches in flight on the first stage, one on the last; the first stage peaks
  // in a block's backward, beside the gradient it receives (this profile measured no more of it).
  EXPECT_NEAR(p.stages[0].peak_bytes, (32 + 40 * 2 / 2.5) * kMB + 2 * x * 20 * kMB + x * 1000, 1);
  EXPECT_NEAR(p.stages[1].peak_bytes, (32 + 40) * kMB + x * (20 + 30) * kMB, 1);
  // GPipe keeps every micro-batch.
  in.gpipe = true;
  EXPECT_NEAR(predictor.predict(in).stages[0].peak_bytes,
              (32 + 40 * 2 / 2.5) * kMB + 4 * x * 20 * kMB + x * 1000, 1);
  // Data parallelism: half the samples per rank, the gradients all-reduced once.
  PredictInput dp = at(16, 0, 1);
  dp.dp = 2;
  const double grads = 4 * (4e6 + 2.5e6);
  EXPECT_NEAR(predictor.predict(dp).step_ms, true_step(kLayers, 8, 0) + (0.1 + grads / 1e6) + loss,
              1e-9);
  // Without the collectives, a layout of two ranks is refused.
  EXPECT_THROW(Predictor(synthetic_profile()).predict(dp), Error);
  PredictInput tp = at(16, 0, 1);
  tp.tp = 2;
  EXPECT_THROW(predictor.predict(tp), Error);  // the profile is of tp = 1
}

// A stage before the last runs no loss: it peaks in a block's backward, every micro-batch in
// flight keeping its blocks' part, the gradient the block receives and what its backward needs
// above them (cost::BlockBytes, measured on one block alone) — mlp-mini's first of two
// stages was 5.3% over its prediction without them. The last stage peaks at its loss, as before.
TEST(PredictorTest, AStageBeforeTheLastPeaksInABlocksBackward) {
  Profile profile = synthetic_profile();
  profile.block_bytes = {true, 0, 10 * kMB, 4 * kMB, 3 * kMB};  // kept: the fit's
  const Predictor measured(profile, synthetic_collectives());
  const Predictor unmeasured(synthetic_profile(), synthetic_collectives());
  PredictInput in = at(16, 0, 4);
  in.pp = 2;
  in.cuts = {2};
  const double x = 4, state = (32 + 40 * 2 / 2.5) * kMB, received = x * 1000;
  const double backward = 4 * kMB + x * 3 * kMB;
  for (bool gpipe : {false, true}) {
    in.gpipe = gpipe;
    const double in_flight = gpipe ? 4 : 2;
    const Prediction p = measured.predict(in), before = unmeasured.predict(in);
    EXPECT_NEAR(p.stages[0].peak_bytes, state + in_flight * x * 20 * kMB + received + backward, 1)
        << gpipe;
    EXPECT_NEAR(p.stages[0].peak_bytes - before.stages[0].peak_bytes, backward, 1) << gpipe;
    EXPECT_NEAR(p.stages[1].peak_bytes, before.stages[1].peak_bytes, 1) << gpipe;
    EXPECT_EQ(p.stages[0].peak_at, PeakMoment::kTopBlockBackward);
    EXPECT_EQ(p.stages[1].peak_at, PeakMoment::kLossBackward);
    EXPECT_EQ(p.peak_at, p.stages[1].peak_at);  // the larger
  }
  // Checkpointed: at the recompute of its top checkpointed block too (one micro-batch's blocks
  // checkpointed, a block recomputed, the others' in flight kept whole).
  in.gpipe = false;
  in.ckpt_blocks = 2;
  const Predictor::Fit& f = measured.fit();
  const double recomputing = f.ckpt_block_kept * 2 + f.block_act + f.ckpt_block_kept * 2;
  const double at_top = 2 * 2 * f.ckpt_block_kept;
  EXPECT_NEAR(measured.predict(in).stages[0].peak_bytes,
              state + x * std::max(recomputing, at_top) + received + backward, 1);
  EXPECT_EQ(measured.predict(in).stages[0].peak_at, PeakMoment::kRecompute);
  // One rank: the measured peaks' fit, unchanged.
  EXPECT_NEAR(measured.predict(at(16)).peak_bytes, unmeasured.predict(at(16)).peak_bytes, 1);
}

// A one-block variant whose optimizer step is its peak at every batch profiled (bert-mini's fused
// head up to 8 samples), its peaks creeping a little above its one-sample peak: the variants'
// difference there is no block's. With the block measured alone, a block keeps what it measured
// and its state is what it adds to the one-sample peaks; the rest is the deep variant's less its
// blocks — every prediction exact. Without, the fit reads the creep as a block.
TEST(PredictorTest, AOneBlockVariantAtItsOptimizerStepIsReadThroughTheBlockAlone) {
  testing::SyntheticWorkload w;
  w.optimizer_peak_mb = 1500;  // over one block's 32 samples (1280 MB), under four blocks' (2240)
  Profile profile = w.profile();
  profile.points.push_back(w.point(kLayers, 48, 0));
  const double floor = w.peak(1, 1, 0);
  for (ProfilePoint& q : profile.points) {
    if (q.layers == 1 && q.batch > 1) q.peak_bytes = floor * (1 + 1e-4 * q.batch);  // the creep
  }
  const Predictor variants_only(profile);
  EXPECT_GT(std::abs(variants_only.fit().block_act - 10 * kMB), 1 * kMB);
  profile.block_bytes = {true, 0, 10 * kMB, 4 * kMB, 3 * kMB};
  const Predictor alone(profile);
  EXPECT_NEAR(alone.fit().block_act, 10 * kMB, 1);
  EXPECT_NEAR(alone.fit().block_state, 16 * kMB, 1);
  EXPECT_NEAR(alone.fit().outside_state, 40 * kMB, 1);
  EXPECT_NEAR(alone.fit().outside_act, 30 * kMB, 1);
  for (int64_t b : {32, 40, 48, 64})
    EXPECT_NEAR(alone.predict(at(b)).peak_bytes, w.peak(kLayers, b, 0), 1) << b;
}

// What the model holds outside its blocks is split between a pipeline's ends: the embeddings'
// state — their parameters at a block's bytes a parameter — on the first stage, the rest on the
// last: the head's state and what its loss holds whatever the batch (the fused LM loss's chunk of
// logits). Split by the parameters, the first stage took a share of the chunk (bert-mini's fused
// head: 7.9 MiB, its trials 6.9% under the prediction).
TEST(PredictorTest, AHeadsConstantBufferIsTheLastStagesAlone) {
  testing::SyntheticWorkload plain, buffered;
  buffered.head_buffer_mb = 50;
  const Predictor a(plain.profile(), synthetic_collectives());
  const Predictor b(buffered.profile(), synthetic_collectives());
  EXPECT_NEAR(b.fit().outside_state - a.fit().outside_state, 50 * kMB, 1);
  PredictInput in = at(16, 0, 4);
  in.pp = 2;
  in.cuts = {2};
  const Prediction p = a.predict(in), q = b.predict(in);
  // The first stage: two blocks and the embeddings' 2·10^6 parameters at 16 bytes; two
  // micro-batches of 4 samples in flight (1F1B), each keeping two blocks' 10 MB a sample.
  EXPECT_NEAR(q.stages[0].peak_bytes, p.stages[0].peak_bytes, 1);
  EXPECT_NEAR(q.stages[0].peak_bytes, (2 * 16 + 32) * kMB + 2 * 4 * 2 * 10 * kMB + 4 * 1000, 1);
  EXPECT_NEAR(q.stages[1].peak_bytes - p.stages[1].peak_bytes, 50 * kMB, 1);
}

TEST(PredictorTest, TensorParallelCollectivesArePricedFromTheRanksCalls) {
  Profile profile = synthetic_profile();
  profile.tp = 2;
  // Per step: 4 all-reduces of x·1000 bytes per block, 2 of x·2000 outside the blocks; a
  // checkpointed block repeats 2 of its own.
  for (ProfilePoint& q : profile.points) {
    q.collectives.all_reduce_calls = 4.0 * static_cast<double>(q.layers) + 2 + 2.0 * q.ckpt_blocks;
    q.collectives.all_reduce_bytes =
        static_cast<double>(q.batch) * (4000.0 * q.layers + 4000 + 2000.0 * q.ckpt_blocks);
  }
  const Predictor predictor(profile, synthetic_collectives());
  PredictInput in = at(8, 1, 1);
  in.tp = 2;
  const double calls = 4 * kLayers + 2 + 2, bytes = 8 * (4000.0 * kLayers + 4000 + 2000);
  EXPECT_NEAR(predictor.predict(in).step_ms,
              true_step(kLayers, 8, 1) + (0.1 * calls + bytes / 1e6) + (0.1 + 8 / 1e6), 1e-9);
}

TEST(PredictorTest, CalibrationRescalesAndNeverUnderPredictsAnObservedOom) {
  Predictor predictor(synthetic_profile());
  const double step16 = predictor.predict(at(16, 0, 1)).step_ms;
  const double peak16 = predictor.predict(at(16, 0, 1)).peak_bytes;
  const double step8 = predictor.predict(at(8, 2, 1)).step_ms;
  const double peak8 = predictor.predict(at(8, 2, 1)).peak_bytes;
  // This machine runs 10% slower than profiled, and a trial used 5% more memory than predicted.
  predictor.calibrate(at(16, 0, 1), 1.1 * step16, 1.05 * peak16);
  EXPECT_NEAR(predictor.predict(at(8, 2, 1)).step_ms, 1.1 * step8, 1e-6);
  EXPECT_NEAR(predictor.predict(at(8, 2, 1)).peak_bytes, 1.05 * peak8, 1);
  // An over-prediction never lowers the memory (an under-prediction is an out-of-memory trial).
  predictor.calibrate(at(16, 0, 1), 1.1 * step16, 0.5 * peak16);
  EXPECT_NEAR(predictor.predict(at(8, 2, 1)).peak_bytes, 1.05 * peak8, 1);
  // A trial that ran out of memory under a budget is predicted over it from now on.
  const double budget = 2 * predictor.predict(at(32, 0, 1)).peak_bytes;
  predictor.calibrate_oom(at(32, 0, 1), budget);
  EXPECT_GT(predictor.predict(at(32, 0, 1)).peak_bytes, budget);
}

// Tokens and model FLOPs per second are the samples per second times what a sample is, as a
// trial counts them — calibrated along with the step; unknown (0, and not in the JSON) when the
// input does not say what a sample is.
TEST(PredictorTest, TokensAndFlopsPerSecondFollowTheSamplesAsATrialCountsThem) {
  Predictor predictor(synthetic_profile());
  PredictInput in = at(16, 2, 1);
  EXPECT_EQ(predictor.predict(in).tokens_per_s, 0);
  EXPECT_EQ(predictor.predict(in).to_json().find("tokens_per_s"), std::string::npos);
  in.tokens_per_sample = 48;
  in.flops_per_sample = 3e9;
  for (int round = 0; round < 2; ++round) {
    const Prediction p = predictor.predict(in);
    EXPECT_NEAR(p.samples_per_s, 16 / (p.step_ms / 1000), 1e-9);
    EXPECT_NEAR(p.tokens_per_s, 48 * p.samples_per_s, 1e-9);
    EXPECT_NEAR(p.tflops, 3e9 * p.samples_per_s / 1e12, 1e-12);
    EXPECT_NE(p.to_json().find("\"tokens_per_s\""), std::string::npos);
    EXPECT_NE(p.to_json().find("\"tflops\""), std::string::npos);
    // This machine runs 25% slower than profiled: every throughput falls with the step.
    if (round == 0) predictor.calibrate(in, 1.25 * p.step_ms, p.peak_bytes);
  }
  const Prediction before = Predictor(synthetic_profile()).predict(in);
  EXPECT_NEAR(predictor.predict(in).tokens_per_s, before.tokens_per_s / 1.25, 1e-6);
}

TEST(PredictorTest, CalibrationCorrectsTheNeighboursOfAMeasurementMost) {
  // This machine runs small micro-batches as profiled and large ones 30% slower.
  Predictor predictor(synthetic_profile());
  const double small = predictor.predict(at(4, 1, 1)).step_ms;
  const double large = predictor.predict(at(32, 1, 1)).step_ms;
  predictor.calibrate(at(4, 0, 1), predictor.predict(at(4, 0, 1)).step_ms, 0);
  predictor.calibrate(at(32, 0, 1), 1.3 * predictor.predict(at(32, 0, 1)).step_ms, 0);
  // Near each measurement, its own ratio most: not one factor for all (which would be ~1.14).
  const double small_scale = predictor.predict(at(4, 1, 1)).step_ms / small;
  const double large_scale = predictor.predict(at(32, 1, 1)).step_ms / large;
  EXPECT_LT(small_scale, 1.1);
  EXPECT_GT(large_scale, 1.18);
  EXPECT_GT(large_scale, 1.0);
  EXPECT_GT(small_scale, 0.99);
  // Far from both (one sample per micro-batch, another layout), the median of the two.
  PredictInput far = at(8, 0, 8);
  far.gpipe = true;
  const double prior = Predictor(synthetic_profile()).predict(far).step_ms;
  EXPECT_NEAR(predictor.predict(far).step_ms / prior, std::sqrt(1.3), 0.03);
}

TEST(PredictorTest, AProfileWithoutWhatTheModelNeedsIsRefused) {
  Profile shallow_only = synthetic_profile();
  shallow_only.points.erase(shallow_only.points.begin() + 3, shallow_only.points.end());
  EXPECT_THROW(Predictor{shallow_only}, Error);
  // A checkpointed step at one sample alone: what a checkpointed block keeps is not known.
  Profile checkpointed_at_one = synthetic_profile();
  checkpointed_at_one.points.erase(checkpointed_at_one.points.begin() + 7);
  ASSERT_TRUE(has_checkpointed_step(checkpointed_at_one));
  EXPECT_THROW(Predictor{checkpointed_at_one}, Error);
}

// A profile of a space that checkpoints nothing has no checkpointed step (runners/profiler.h): it
// predicts what it was measured for as the whole profile does, and refuses checkpointed blocks in
// one line rather than guess their recompute.
TEST(PredictorTest, AProfileWithoutACheckpointedStepPredictsNoCheckpointing) {
  Profile plain = synthetic_profile();
  plain.points.resize(7);
  ASSERT_FALSE(has_checkpointed_step(plain));
  const Predictor without(plain), whole(synthetic_profile());
  EXPECT_FALSE(without.fit().checkpointed);
  EXPECT_TRUE(whole.fit().checkpointed);
  for (int64_t batch : {2, 8, 32, 64}) {
    const PredictInput in = at(batch, 0, 1);
    EXPECT_DOUBLE_EQ(without.predict(in).step_ms, whole.predict(in).step_ms) << batch;
    EXPECT_DOUBLE_EQ(without.predict(in).peak_bytes, whole.predict(in).peak_bytes) << batch;
  }
  try {
    without.predict(at(8, 2, 1));
    ADD_FAILURE() << "checkpointed blocks predicted without a checkpointed step";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the profile has no checkpointed step"), std::string::npos)
        << e.what();
  }
}

TEST(PredictorTest, BlocksTooSmallToTimeRecomputeInNoTime) {
  // A tiny model: the deep variant is no slower than the shallow one within the noise (B = 0).
  Profile p = synthetic_profile();
  for (ProfilePoint& q : p.points) {
    q.step_ms = 1.0 + optimizer_ms(static_cast<double>(q.layers)) / 1000;
  }
  const Predictor predictor(p);
  EXPECT_EQ(predictor.fit().recompute_share, 0);
  EXPECT_GT(predictor.predict(at(8, 2, 1)).step_ms, 0);
}

TEST(ProfileTest, RoundTripsThroughJson) {
  Profile p = synthetic_profile();
  p.tp = 2;
  p.points[3].collectives.all_gather_bytes = 12.5;
  p.shape.largest_prologue_tensor = 2e6;
  p.optimizer_temp_bytes_per_element = 8;
  p.block_bytes = {true, 1, 2, 4096, -12.5};
  const Profile back = Profile::from_json(p.to_json(), "p");
  EXPECT_EQ(back.optimizer_temp_bytes_per_element, 8);
  EXPECT_EQ(back.block_bytes, p.block_bytes);
  EXPECT_EQ(back.points, p.points);
  EXPECT_EQ(back.shape, p.shape);
  // One stored before the largest parameters, the temporaries and the block's backward were
  // measured reads them as not.
  nlohmann::json older = nlohmann::json::parse(p.to_json());
  older["shape"].erase("largest_prologue_tensor");
  older.erase("optimizer_temp_bytes_per_element");
  older.erase("block_bytes");
  EXPECT_FALSE(Profile::from_json(older.dump(), "p").block_bytes.measured);
  EXPECT_EQ(Profile::from_json(older.dump(), "p").block_bytes.backward(16), 0);
  EXPECT_EQ(Profile::from_json(older.dump(), "p").shape.largest_prologue_tensor, 0);
  EXPECT_EQ(Profile::from_json(older.dump(), "p").optimizer_temp_bytes_per_element, -1);
  EXPECT_EQ(back.layers, kLayers);
  EXPECT_EQ(back.tp, 2);
  EXPECT_EQ(back.optimizer_ms_per_param, p.optimizer_ms_per_param);
  EXPECT_EQ(back.key_json, p.key_json);
  EXPECT_THROW(Profile::from_json("{\"points\": 3}", "p.json"), Error);
  // A profile of an earlier slapo (no shape) is refused with a reason.
  EXPECT_THROW(Profile::from_json(R"({"key":{},"fingerprint":{},"layers":4,"points":[]})", "p"),
               Error);
}

TEST(CollectivesTest, FitsAlphaBetaAndScalesByTheRingAlgorithms) {
  CollectiveProfile c;
  c.fingerprint_json = "{}";
  for (double bytes : {4096.0, 262144.0, 4194304.0}) {
    c.samples.push_back({"all_reduce", bytes, 0.05 + bytes * 2e-6});
    c.samples.push_back({"all_gather", bytes, 0.04 + bytes * 1e-6});
    c.samples.push_back({"send_recv", bytes, 0.02 + bytes * 5e-7});
  }
  const CollectiveProfile back = CollectiveProfile::from_json(c.to_json(), "c");
  const CollectiveModel model(back);
  EXPECT_NEAR(model.all_reduce_fit().alpha_ms, 0.05, 1e-9);
  EXPECT_NEAR(model.all_reduce_fit().beta_ms_per_byte, 2e-6, 1e-15);
  EXPECT_NEAR(model.send_ms(1e6), 0.02 + 0.5, 1e-9);
  EXPECT_EQ(model.all_reduce_ms(1e6, 1), 0);
  EXPECT_NEAR(model.all_reduce_ms(1e6, 2, 3), 3 * 0.05 + 2, 1e-9);
  // 4 ranks: 3 times the steps, 1.5 times the volume per rank of 2 ranks.
  EXPECT_NEAR(model.all_reduce_ms(1e6, 4), 3 * 0.05 + 1.5 * 2, 1e-9);
  EXPECT_NEAR(model.all_gather_ms(1e6, 4), 3 * (0.04 + 1), 1e-9);
  EXPECT_TRUE(model.extrapolates(4));
  EXPECT_FALSE(model.extrapolates(2));
  CollectiveProfile one_size = c;
  one_size.samples.resize(3);
  EXPECT_THROW(CollectiveModel{one_size}, Error);
}

TEST(CollectivesTest, GradientsAreAveragedAsTimedOrAsTheirBucketsAllReduces) {
  CollectiveProfile c;
  for (double bytes : {4096.0, 4194304.0}) {
    c.samples.push_back({"all_reduce", bytes, 0.05 + bytes * 2e-6});
    c.samples.push_back({"all_gather", bytes, 0.04 + bytes * 1e-6});
    c.samples.push_back({"send_recv", bytes, 0.02 + bytes * 5e-7});
  }
  const double bucket = 25 << 20;
  // A profile of an earlier slapo: the buckets' all-reduces (48 MiB: two).
  const CollectiveModel before(CollectiveProfile::from_json(c.to_json(), "c"));
  EXPECT_FALSE(before.has_gradient_sync());
  EXPECT_NEAR(before.gradient_sync_ms(48 << 20, 2, bucket), before.all_reduce_ms(48 << 20, 2, 2),
              1e-9);
  // Timed: its own line, through the store and back.
  c.samples.push_back({"gradient_sync", 12 << 20, 60});
  c.samples.push_back({"gradient_sync", 48 << 20, 210});
  const CollectiveModel timed(CollectiveProfile::from_json(c.to_json(), "c"));
  EXPECT_TRUE(timed.has_gradient_sync());
  EXPECT_NEAR(timed.gradient_sync_ms(48 << 20, 2, bucket), 210, 1e-9);
  EXPECT_NEAR(timed.gradient_sync_ms(30 << 20, 2, bucket), 135, 1e-9);
  EXPECT_EQ(timed.gradient_sync_ms(48 << 20, 1, bucket), 0);
  // Four ranks: what the all-reduces take more by the ring formulas, the packing as measured.
  EXPECT_NEAR(timed.gradient_sync_ms(48 << 20, 4, bucket),
              210 + timed.all_reduce_ms(48 << 20, 4, 2) - timed.all_reduce_ms(48 << 20, 2, 2),
              1e-9);
  // One size is no line.
  c.samples.pop_back();
  EXPECT_THROW(CollectiveModel{c}, Error);
}

TEST(CutSearchTest, FindsTheSplitThatEnumerationFinds) {
  // 12 blocks, the first 5 checkpointed (stages are not alike), 3 stages of 2..6 blocks.
  const Predictor predictor(synthetic_profile(12), synthetic_collectives());
  for (bool gpipe : {false, true}) {
    for (int64_t m : {1, 4}) {
      for (double budget : {0.0, 420 * kMB, 330 * kMB}) {
        PredictInput in = at(32, 5, m);
        in.pp = 3;
        in.gpipe = gpipe;
        const space::StageSplits splits(12, 3, 2, 6);
        double best = INFINITY;
        splits.for_each([&](const IntList& cuts) {
          PredictInput c = in;
          c.cuts = cuts;
          const Prediction p = predictor.predict(c);
          if (budget <= 0 || p.peak_bytes <= budget) best = std::min(best, p.step_ms);
          return true;
        });
        // The dynamic program and the stages' costs summed split by split (the cheaper where
        // there are few splits): the same best.
        for (CutMethod method : {CutMethod::kDynamicProgramming, CutMethod::kEachSplit}) {
          const std::optional<CutSearch> found = best_cuts(predictor, in, splits, budget, method);
          if (best == INFINITY) {
            EXPECT_FALSE(found) << m << " " << budget;
            continue;
          }
          ASSERT_TRUE(found) << m << " " << budget;
          EXPECT_EQ(found->enumerated, method == CutMethod::kEachSplit);
          EXPECT_NEAR(found->prediction.step_ms, best, 1e-9) << gpipe << " " << m << " " << budget;
          EXPECT_TRUE(splits.contains(found->cuts));
          if (budget > 0) {
            EXPECT_LE(found->prediction.peak_bytes, budget);
          }
        }
      }
    }
  }
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
    out.prediction = predictor.predict(at(b, std::get<int64_t>(*c.find("ckpt_layers")), 1));
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
      if (true_peak(kLayers, b, n) > 1000 * kMB)
        ++oom;
      else
        fitting.push_back(b / (true_step(kLayers, b, n) / 1000));
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

// Ranked by tokens per second, a configuration of longer samples goes ahead of one of the same
// step with shorter ones — where by samples per second they tie; a metric the model does not
// predict is refused naming it.
TEST(PlannerTest, RanksByTokensPerSecondWhenSamplesDifferInLength) {
  const space::CompiledSpace compiled = space::CompiledSpace::compile(space::parse_space(
      "[knobs]\nbatch_size = { pow2 = [1, 64] }\nseq_len = { values = [32, 48] }\n", "s.toml"));
  const Predictor predictor(synthetic_profile());
  const ConfigPredictor predict = [&](const Config& c) {
    Predicted out;
    PredictInput in = at(std::get<int64_t>(*c.find("batch_size")));
    in.tokens_per_sample = static_cast<double>(std::get<int64_t>(*c.find("seq_len")));
    out.prediction = predictor.predict(in);
    return out;
  };
  PlanOptions options;
  options.top = 2;
  options.group_alike = false;
  options.objective = {"samples_per_s", false};
  const Plan by_samples = cost::plan(compiled, predict, options);
  ASSERT_EQ(by_samples.top.size(), 2u);
  EXPECT_EQ(by_samples.top[0].objective, by_samples.top[1].objective);
  EXPECT_EQ(std::get<int64_t>(*by_samples.top[0].config.find("seq_len")), 32);
  options.objective = {"tokens_per_s", false};
  const Plan by_tokens = cost::plan(compiled, predict, options);
  ASSERT_EQ(by_tokens.top.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(*by_tokens.top[0].config.find("seq_len")), 48);
  EXPECT_EQ(std::get<int64_t>(*by_tokens.top[0].config.find("batch_size")),
            std::get<int64_t>(*by_samples.top[0].config.find("batch_size")));
  EXPECT_NEAR(by_tokens.top[0].objective, 48 * by_samples.top[0].objective, 1e-6);
  EXPECT_TRUE(predicts_metric("tflops"));
  EXPECT_FALSE(predicts_metric("loss_last"));
  try {
    check_predicted_metric("loss_last");
    FAIL() << "loss_last taken for a predicted metric";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokens_per_s, tflops"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not 'loss_last'"), std::string::npos) << e.what();
  }
}

// A knob the prediction does not depend on makes configurations predicted alike: one plan each,
// the first in the space, with how many more and the knob that differs — by enumeration and by
// the cut search; with group_alike off, each configuration is its own row.
TEST(PlannerTest, ConfigurationsPredictedAlikeAreOnePlan) {
  const Predictor predictor(synthetic_profile(12), synthetic_collectives());
  auto batch = [](const Config& c) { return std::get<int64_t>(*c.find("batch_size")); };
  const space::CompiledSpace enumerated = space::CompiledSpace::compile(space::parse_space(
      "[knobs]\nbatch_size = { pow2 = [1, 64] }\nmode = { choice = [\"a\", \"b\", \"c\"] }\n",
      "s.toml"));
  const ConfigPredictor predict = [&](const Config& c) {
    return Predicted{predictor.predict(at(batch(c), 0, 1)), ""};
  };
  PlanOptions options;
  options.top = 3;
  const Plan grouped = cost::plan(enumerated, predict, options);
  ASSERT_EQ(grouped.top.size(), 3u);
  std::set<int64_t> batches;
  for (const PlannedConfig& p : grouped.top) {
    batches.insert(batch(p.config));
    EXPECT_EQ(p.alike, 2u);
    EXPECT_EQ(p.alike_knobs, std::vector<std::string>{"mode"});
    EXPECT_EQ(std::get<std::string>(*p.config.find("mode")), "a");  // the first of them
    EXPECT_EQ(enumerated.at(p.index), p.config);
  }
  EXPECT_EQ(batches.size(), 3u);
  options.group_alike = false;
  const Plan each = cost::plan(enumerated, predict, options);
  ASSERT_EQ(each.top.size(), 3u);
  for (const PlannedConfig& p : each.top) {
    EXPECT_EQ(batch(p.config), batch(grouped.top[0].config));
    EXPECT_EQ(p.alike, 0u);
  }

  const space::CompiledSpace with_cuts = space::CompiledSpace::compile(
      space::parse_space("[knobs]\npp = { values = [2, 3] }\nmode = { choice = [\"a\", \"b\"] }\n"
                         "cuts = { layers = 12, stages = \"pp\", min = 2, max = 7 }\n",
                         "s.toml"));
  auto input = [](const Config& c) {
    PredictInput in = at(32, 0, 4);
    in.pp = std::get<int64_t>(*c.find("pp"));
    if (const Value* cuts = c.find("cuts")) in.cuts = std::get<IntList>(*cuts);
    return in;
  };
  const ConfigPredictor predict_cuts = [&](const Config& c) {
    return Predicted{predictor.predict(input(c)), ""};
  };
  const ConfigComposer compose = [&](const Config& c) {
    return Composable{&predictor, input(c), ""};
  };
  options.group_alike = true;
  const Plan searched = cost::plan(with_cuts, predict_cuts, options, compose);
  ASSERT_EQ(searched.top.size(), 2u);  // pp = 2 and pp = 3
  for (const PlannedConfig& p : searched.top) {
    EXPECT_EQ(p.alike, 1u);
    EXPECT_EQ(p.alike_knobs, std::vector<std::string>{"mode"});
  }
}

TEST(PlannerTest, ChoosesCutPointsByTheSearchAsEnumerationWould) {
  const space::CompiledSpace compiled = space::CompiledSpace::compile(
      space::parse_space("[knobs]\npp = { values = [2, 3] }\nmicro_batches = { values = [1, 4] }\n"
                         "cuts = { layers = 12, stages = \"pp\", min = 2, max = 7 }\n",
                         "s.toml"));
  const Predictor predictor(synthetic_profile(12), synthetic_collectives());
  auto input = [](const Config& c) {
    PredictInput in = at(32, 5, std::get<int64_t>(*c.find("micro_batches")));
    in.pp = std::get<int64_t>(*c.find("pp"));
    if (const Value* cuts = c.find("cuts")) in.cuts = std::get<IntList>(*cuts);
    return in;
  };
  const ConfigPredictor predict = [&](const Config& c) {
    return Predicted{predictor.predict(input(c)), ""};
  };
  const ConfigComposer compose = [&](const Config& c) {
    return Composable{&predictor, input(c), ""};
  };
  PlanOptions options;
  options.top = 4;
  options.memory_budget_bytes = 1500 * kMB;
  const Plan enumerated = cost::plan(compiled, predict, options);
  const Plan searched = cost::plan(compiled, predict, options, compose);
  EXPECT_NE(searched.method.find("dynamic programming"), std::string::npos);
  EXPECT_EQ(searched.considered, compiled.size());
  // The search's plans are the best of each (pp, micro_batches): the enumeration's best is first.
  ASSERT_FALSE(searched.top.empty());
  EXPECT_NEAR(searched.top[0].objective, enumerated.top[0].objective, 1e-9);
  EXPECT_EQ(compiled.at(searched.top[0].index), searched.top[0].config);
  EXPECT_TRUE(compiled.contains(searched.top[0].config).ok);
}

}  // namespace
}  // namespace slapo::cost
