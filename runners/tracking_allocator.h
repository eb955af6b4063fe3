#pragma once
// TrackingAllocator: exact live and peak bytes of every CPU tensor, and an optional hard budget.
//
// Installed with c10::SetCPUAllocator, it sees every tensor allocated after it — tensors saved for
// backward and oneDNN buffers included (not OpenBLAS's own work buffers nor other libraries'
// malloc: report the process RSS beside it). Past the budget, an allocation throws LibTorch's
// c10::OutOfMemoryError, so an out-of-memory boundary exists on the CPU as it does on a GPU.
//
// Where the heap is kept (runners/heap_policy.h), the blocks too large for it are kept here for
// the next tensor of their size (runners/large_block_cache.h); live and peak bytes are the
// tensors', whatever holds them.
//
// One process-wide instance, never destroyed: it must outlive every tensor it allocated.

#include <cstddef>
#include <cstdint>
#include <string>

namespace slapo::runners {

class TrackingAllocator {
 public:
  // The instance, installed as the CPU allocator on first use.
  static TrackingAllocator& instance();

  size_t live_bytes() const;
  size_t peak_bytes() const;
  // Frees the large blocks kept for the next tensors of their sizes (runners/large_block_cache.h):
  // before a step of new sizes, whose blocks should find the heap's room instead.
  void release_cached_blocks();
  // The bytes of the large blocks kept (not tensors').
  size_t cached_bytes() const;
  // Starts a new peak at the current live bytes.
  void reset_peak();
  // 0: no budget. Otherwise an allocation that would take live bytes past it throws
  // c10::OutOfMemoryError: "`why`: L bytes live, N more requested", `why` by default "slapo
  // memory budget of B bytes exceeded" (the budget's own reason where it has one: this machine's
  // memory, runners/machine_memory.h).
  void set_budget(size_t bytes, std::string why = "");
  size_t budget() const;
  // What an allocation past the budget says it ran out of (set_budget's `why`, or the default).
  std::string budget_why() const;

 private:
  TrackingAllocator();
  struct Impl;
  Impl* impl_;
};

}  // namespace slapo::runners
