// The simulated tensor-parallel group (runners/simulated_group.h): its collectives move nothing,
// count what the rank would send, and allocate what the real group allocates — one rank's part
// outliving an all-gather until the next collective, as Gloo's worker thread releases it late.

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "runners/simulated_group.h"
#include "runners/tracking_allocator.h"

namespace slapo::runners {
namespace {

// What a gather allocates is the real group's — an output per rank and Gloo's flat buffer of
// them all, at once — and none of it outlives the call (the real group waits for Gloo's worker
// thread to let go of the work: dist/gloo_communicator.cc).
TEST(SimulatedGroupTest, AGathersBuffersAreGoneWhenTheCallReturns) {
  TrackingAllocator& memory = TrackingAllocator::instance();
  SimulatedGroup group(2);
  const torch::Tensor part = torch::ones({256, 1024});  // 1 MiB
  const double before = static_cast<double>(memory.live_bytes());
  memory.reset_peak();
  {
    const std::vector<at::Tensor> parts = group.all_gather(part);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_TRUE(parts[1].equal(part));
  }
  EXPECT_EQ(static_cast<double>(memory.peak_bytes()) - before, 4 * part.nbytes());
  EXPECT_EQ(static_cast<double>(memory.live_bytes()), before);
  at::Tensor grad = torch::ones({4});
  group.all_reduce(grad, schedule::ReduceOp::kSum);
  EXPECT_EQ(static_cast<double>(memory.live_bytes()) - before, grad.nbytes());
  EXPECT_TRUE(grad.equal(torch::ones({4})));  // moves nothing
  EXPECT_EQ(group.tally().all_gather_calls, 1);
  EXPECT_EQ(group.tally().all_gather_bytes, part.nbytes());
  EXPECT_EQ(group.tally().all_reduce_calls, 1);
}

}  // namespace
}  // namespace slapo::runners
