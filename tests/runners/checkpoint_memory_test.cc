// What a checkpointed block's backward needs (schedule/runtime/checkpoint.h), read by the tracking
// allocator: its recomputed activations above what the plain block's backward needs, not its
// parameters' gradients all at once. Weights large and activations small (one row) make the
// difference plain: four 512 × 512 weights (1 MiB each) before a row of 512 numbers.

#include <gtest/gtest.h>

#include <vector>

#include <torch/torch.h>

#include "runners/tracking_allocator.h"
#include "schedule/runtime/checkpoint.h"

namespace slapo::runners {
namespace {

// The peak above what lives before it of one backward of the block on `x`, the weights' gradients
// already allocated (as in every step after the first).
size_t backward_peak(const std::vector<torch::Tensor>& weights, bool checkpointed) {
  auto forward = [&](const std::vector<torch::Tensor>& in) {
    torch::Tensor h = in.front();
    for (const torch::Tensor& w : weights) h = torch::tanh(torch::matmul(h, w));
    return std::vector<torch::Tensor>{h};
  };
  for (const torch::Tensor& w : weights) w.mutable_grad() = torch::zeros_like(w);
  const torch::Tensor x = torch::randn({1, 512}, torch::requires_grad());
  TrackingAllocator& tracker = TrackingAllocator::instance();
  torch::Tensor y = checkpointed ? schedule::checkpoint_call(forward, {x}, weights, {}).front()
                                 : forward({x}).front();
  torch::Tensor loss = y.sum();
  const size_t before = tracker.live_bytes();
  tracker.reset_peak();
  loss.backward();
  return tracker.peak_bytes() - before;
}

TEST(CheckpointMemoryTest, ABlocksBackwardMakesItsGradientsOneAtATimeCheckpointedOrNot) {
  torch::manual_seed(1);
  std::vector<torch::Tensor> weights;
  for (int i = 0; i < 4; ++i) weights.push_back(0.05 * torch::randn({512, 512}));
  for (torch::Tensor& w : weights) w.requires_grad_(true);
  const size_t plain = backward_peak(weights, false);
  const size_t checkpointed = backward_peak(weights, true);
  const size_t weight = 512 * 512 * 4;
  // Plain: one weight's gradient made before it is added to the kept one, and a few rows.
  EXPECT_GE(plain, weight);
  EXPECT_LT(plain, 2 * weight);
  // Checkpointed: the same and the recomputed rows (a few kB) — not the four gradients at once.
  EXPECT_LE(checkpointed, plain + 64 * 1024) << "plain " << plain;
}

}  // namespace
}  // namespace slapo::runners
