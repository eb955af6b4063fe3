#include "runners/large_block_cache.h"

#include <algorithm>

namespace slapo::runners {

LargeBlockCache::LargeBlockCache(size_t cached_from, Allocate allocate, Free free)
    : cached_from_(cached_from), allocate_(allocate), free_(free) {}

LargeBlockCache::~LargeBlockCache() { release_all(); }

void LargeBlockCache::release_all() {
  for (const auto& [capacity, data] : kept_) free_(data);
  kept_.clear();
  cached_ = 0;
}

LargeBlockCache::Block LargeBlockCache::take(size_t bytes, size_t live) {
  if (bytes < cached_from_) return {allocate_(bytes), bytes};
  high_water_ = std::max(high_water_, live + bytes);
  // A ninth more at most: a block of the same shape is the same size; a larger one would hold
  // memory its tensor never touches.
  auto it = kept_.lower_bound(bytes);
  if (it != kept_.end() && it->first <= bytes + bytes / 9) {
    const Block block{it->second, it->first};
    cached_ -= it->first;
    kept_.erase(it);
    return block;
  }
  while (!kept_.empty() && live + cached_ + bytes > high_water_) {
    const auto smallest = kept_.begin();
    free_(smallest->second);
    cached_ -= smallest->first;
    kept_.erase(smallest);
  }
  return {allocate_(bytes), bytes};
}

void LargeBlockCache::give_back(const Block& block) {
  if (block.data == nullptr) return;
  if (block.capacity < cached_from_) {
    free_(block.data);
    return;
  }
  kept_.emplace(block.capacity, block.data);
  cached_ += block.capacity;
}

}  // namespace slapo::runners
