#pragma once
// LargeBlockCache: the tensor blocks too large for the heap to keep, kept for the next request of
// their size — what a GPU's caching allocator does for every block.
//
// glibc maps a block above its mmap threshold (32 MiB at most: runners/heap_policy.h) on its own
// and unmaps it when it is freed, unless the heap's free top happens to have room for it. A
// training step frees and allocates the same large tensors every step (a big vocabulary's logits
// and their gradients), so without a cache each step faults their pages in again and the kernel
// zeroes every one: bert-mini at 16 samples and 64 positions (125 MiB logits) ran its steps 15%
// slower in a trial than in the profile, whose touched heap happened to have the room
// (docs/runners.md, "The heap").
//
// Bounded by the process's high water mark of live tensor bytes: a new block is made only after
// giving back, smallest first, as many kept blocks as would take live, kept and new bytes past
// it. Blocks of one shape reused step after step never trip it; the blocks of a smaller batch an
// earlier step used (the profile's sweep) go when a larger one needs the memory.
//
// Not thread-safe: the tracking allocator calls it under its lock.

#include <cstddef>
#include <map>

namespace slapo::runners {

class LargeBlockCache {
 public:
  using Allocate = void* (*)(size_t bytes);
  using Free = void (*)(void* data);

  // Blocks of at least `cached_from` bytes are kept; `allocate` and `free` make and give back
  // blocks (c10::alloc_cpu and c10::free_cpu in the tracking allocator).
  LargeBlockCache(size_t cached_from, Allocate allocate, Free free);
  LargeBlockCache(const LargeBlockCache&) = delete;
  LargeBlockCache& operator=(const LargeBlockCache&) = delete;
  ~LargeBlockCache();

  struct Block {
    void* data = nullptr;
    size_t capacity = 0;  // what give_back is passed again
  };
  // A block of at least `bytes`, with `live` tensor bytes live before it: a kept block of `bytes`
  // to a ninth more (the least such), else a new one. A block below `cached_from` is always new.
  Block take(size_t bytes, size_t live);
  // Keeps the block (at least `cached_from` bytes) or frees it.
  void give_back(const Block& block);
  // Frees every kept block.
  void release_all();

  size_t cached_bytes() const { return cached_; }
  size_t cached_from() const { return cached_from_; }

 private:
  size_t cached_from_;
  Allocate allocate_;
  Free free_;
  std::multimap<size_t, void*> kept_;  // capacity → block
  size_t cached_ = 0;
  size_t high_water_ = 0;  // the most live bytes a take has seen, its block included
};

}  // namespace slapo::runners
