// The trainer of one rank (runners/parallel_trainer.h): the time its optimizer's steps take, read
// by the profile (runners/profiler.h) to time the optimizer on the model's own parameters.

#include "runners/parallel_trainer.h"

#include <gtest/gtest.h>

#include <chrono>

#include <torch/torch.h>

#include "models/training_batch.h"
#include "runners/simulated_group.h"
#include "runners/workload.h"

namespace slapo::runners {
namespace {

TEST(ParallelTrainerTest, TheOptimizersStepsAreTimedWithinTheStep) {
  const Workload w = Workload::from_json(
      R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 1, "steps": 1, "threads": 1})", "test");
  Config c;
  c.set("batch_size", Value(int64_t{2}));
  std::shared_ptr<SimulatedGroup> group;
  ParallelTrainer trainer({w.spec(), w.schedule_template(), c, w.seed, w.optimizer, w.lr, {}},
                          simulated_groups(1, &group));
  const models::TrainingBatch b = models::training_batch(
      w.spec(), torch::randint(w.spec().vocab, {2, w.seq_len_for(c) + 1}, torch::kLong));
  // A step that leaves the gradients in place runs no optimizer.
  trainer.step(b.inputs, b.targets, 0, /*update=*/false);
  EXPECT_EQ(trainer.optimizer_seconds(), 0.0);
  // Each step that updates adds its optimizer's time: some, and less than the step's.
  double before = 0;
  for (uint64_t i = 1; i <= 2; ++i) {
    const auto start = std::chrono::steady_clock::now();
    trainer.step(b.inputs, b.targets, i);
    const double step_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double optimizer_s = trainer.optimizer_seconds() - before;
    EXPECT_GT(optimizer_s, 0.0) << "step " << i;
    EXPECT_LT(optimizer_s, step_s) << "step " << i;
    before = trainer.optimizer_seconds();
  }
}

}  // namespace
}  // namespace slapo::runners
