#include <gtest/gtest.h>

#include <torch/torch.h>

#include "runners/heap_policy.h"
#include "runners/tracking_allocator.h"

namespace slapo::runners {
namespace {

TEST(TrackingAllocatorTest, CountsLiveAndPeakBytesExactly) {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  const size_t before = tracker.live_bytes();
  tracker.reset_peak();
  {
    torch::Tensor a = torch::empty({1024, 256}, torch::kFloat);  // 1 MiB
    EXPECT_EQ(tracker.live_bytes() - before, 1024u * 256 * 4);
    torch::Tensor b = torch::empty({512}, torch::kDouble);
    EXPECT_EQ(tracker.live_bytes() - before, 1024u * 256 * 4 + 512 * 8);
  }
  EXPECT_EQ(tracker.live_bytes(), before);
  EXPECT_EQ(tracker.peak_bytes() - before, 1024u * 256 * 4 + 512 * 8);
  torch::Tensor empty = torch::empty({0});
  EXPECT_EQ(tracker.live_bytes(), before);
}

TEST(TrackingAllocatorTest, SeesTensorsSavedForBackward) {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  torch::Tensor w = torch::randn({256, 256}, torch::requires_grad());
  torch::Tensor x = torch::randn({64, 256});
  const size_t before = tracker.live_bytes();
  torch::Tensor y =
      torch::relu(torch::matmul(x, w));  // keeps the matmul output for relu's backward
  EXPECT_GE(tracker.live_bytes() - before, 64u * 256 * 4);
}

TEST(TrackingAllocatorTest, BudgetTurnsAnOverrunIntoOutOfMemory) {
  TrackingAllocator& tracker = TrackingAllocator::instance();
  tracker.set_budget(tracker.live_bytes() + (1 << 20));
  EXPECT_NO_THROW(torch::empty({1 << 17}, torch::kFloat));  // 512 KiB fits
  try {
    torch::Tensor big = torch::empty({1 << 20}, torch::kFloat);  // 4 MiB does not
    FAIL() << "no out-of-memory error";
  } catch (const c10::OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("slapo memory budget"), std::string::npos);
  }
  tracker.set_budget(0);
  EXPECT_NO_THROW(torch::empty({1 << 20}, torch::kFloat));  // usable afterwards
}

TEST(TrackingAllocatorTest, ALargeBlockIsKeptUntilTheCacheIsReleased) {
  if (heap_policy() != "retained") GTEST_SKIP() << "this environment configures malloc itself";
  TrackingAllocator& tracker = TrackingAllocator::instance();
  tracker.release_cached_blocks();
  const size_t live = tracker.live_bytes();
  void* first = nullptr;
  {
    torch::Tensor big = torch::ones({24 << 20});  // 96 MiB: above the mmap threshold
    first = big.data_ptr();
  }
  EXPECT_EQ(tracker.live_bytes(), live);  // not a tensor's any more
  // Kept, and the next tensor of its size gets it.
  EXPECT_EQ(tracker.cached_bytes(), 96u << 20);
  {
    torch::Tensor again = torch::empty({24 << 20});
    EXPECT_EQ(again.data_ptr(), first);
    EXPECT_EQ(tracker.cached_bytes(), 0u);
  }
  tracker.release_cached_blocks();
  EXPECT_EQ(tracker.cached_bytes(), 0u);
}

}  // namespace
}  // namespace slapo::runners
