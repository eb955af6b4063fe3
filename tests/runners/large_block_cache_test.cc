// LargeBlockCache: a freed large block serves the next request of its size; the blocks kept never
// take the process past its high water mark of live bytes; small blocks are never kept.

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "runners/large_block_cache.h"

namespace slapo::runners {
namespace {

// The blocks the fake allocator has made and not yet freed.
std::set<void*>& outstanding() {
  static std::set<void*> blocks;
  return blocks;
}
int g_made = 0;

void* make(size_t bytes) {
  void* p = std::malloc(bytes);
  outstanding().insert(p);
  ++g_made;
  return p;
}
void unmake(void* p) {
  outstanding().erase(p);
  std::free(p);
}

constexpr size_t kFrom = 1000;

class LargeBlockCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_made = 0;
    outstanding().clear();
  }
};

TEST_F(LargeBlockCacheTest, AFreedLargeBlockServesTheNextRequestOfItsSize) {
  LargeBlockCache cache(kFrom, &make, &unmake);
  const LargeBlockCache::Block a = cache.take(5000, 10000);  // high water 15000
  cache.give_back(a);
  EXPECT_EQ(cache.cached_bytes(), 5000u);
  EXPECT_EQ(outstanding().size(), 1u);  // kept, not freed
  // The same size, and a little less (within a ninth): the kept block, no new one.
  const LargeBlockCache::Block again = cache.take(5000, 0);
  EXPECT_EQ(again.data, a.data);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.give_back(again);
  const LargeBlockCache::Block smaller = cache.take(4600, 0);
  EXPECT_EQ(smaller.data, a.data);
  EXPECT_EQ(smaller.capacity, 5000u);
  EXPECT_EQ(g_made, 1);
  cache.give_back(smaller);
  // Much less: a block of its own (the kept one would hold twice what it touches), the kept one
  // still kept (under the high water mark).
  const LargeBlockCache::Block half = cache.take(2500, 0);
  EXPECT_NE(half.data, a.data);
  EXPECT_EQ(g_made, 2);
  EXPECT_EQ(cache.cached_bytes(), 5000u);
  cache.give_back(half);
}

TEST_F(LargeBlockCacheTest, SmallBlocksAreFreedAtOnce) {
  LargeBlockCache cache(kFrom, &make, &unmake);
  const LargeBlockCache::Block small = cache.take(999, 0);
  EXPECT_EQ(small.capacity, 999u);
  cache.give_back(small);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_TRUE(outstanding().empty());
}

TEST_F(LargeBlockCacheTest, KeptBlocksGoSmallestFirstRatherThanPassTheHighWaterMark) {
  LargeBlockCache cache(kFrom, &make, &unmake);
  // A step at a small batch: two blocks live at once (high water 4000), then freed and kept.
  const LargeBlockCache::Block a = cache.take(2000, 0);
  const LargeBlockCache::Block b = cache.take(2000, 2000);
  cache.give_back(a);
  cache.give_back(b);
  EXPECT_EQ(cache.cached_bytes(), 4000u);
  // A larger batch's block of 3000 with 500 bytes live: 500 + 4000 kept + 3000 > 4000 → kept
  // blocks go, smallest first, until live, kept and new fit under the new high water (3500).
  const LargeBlockCache::Block c = cache.take(3000, 500);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  EXPECT_EQ(outstanding().size(), 1u);
  cache.give_back(c);
  // The same larger step again: its block is kept and reused, nothing more made.
  const int made = g_made;
  cache.give_back(cache.take(3000, 500));
  EXPECT_EQ(g_made, made);
}

TEST_F(LargeBlockCacheTest, ASteadyStepMakesItsBlocksOnce) {
  LargeBlockCache cache(kFrom, &make, &unmake);
  for (int step = 0; step < 5; ++step) {
    // The logits, their softmax and its gradient: live together, then freed.
    const LargeBlockCache::Block logits = cache.take(8000, 100);
    const LargeBlockCache::Block softmax = cache.take(8000, 8100);
    const LargeBlockCache::Block grad = cache.take(8000, 16100);
    cache.give_back(softmax);
    cache.give_back(logits);
    cache.give_back(grad);
  }
  EXPECT_EQ(g_made, 3);
  EXPECT_EQ(cache.cached_bytes(), 24000u);
}

TEST_F(LargeBlockCacheTest, TheCacheFreesWhatItKeepsWhenAskedOrDestroyed) {
  {
    LargeBlockCache cache(kFrom, &make, &unmake);
    cache.give_back(cache.take(5000, 10000));  // high water 15000: both kept
    cache.give_back(cache.take(3000, 0));
    EXPECT_EQ(outstanding().size(), 2u);
    cache.release_all();
    EXPECT_TRUE(outstanding().empty());
    EXPECT_EQ(cache.cached_bytes(), 0u);
    cache.give_back(cache.take(5000, 0));
    EXPECT_EQ(outstanding().size(), 1u);
  }
  EXPECT_TRUE(outstanding().empty());
}

}  // namespace
}  // namespace slapo::runners
