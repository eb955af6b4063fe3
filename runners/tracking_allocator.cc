#include "runners/tracking_allocator.h"

#include <atomic>
#include <limits>
#include <mutex>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include "runners/heap_policy.h"
#include "runners/large_block_cache.h"

namespace slapo::runners {

namespace {

// LibTorch's CPU allocators are installed at priority 0; ours must be at least that.
constexpr uint8_t kPriority = 1;

void* allocate_block(size_t bytes) { return c10::alloc_cpu(bytes); }

struct Allocation {
  size_t bytes = 0;              // what the tensor asked for: live and peak count these
  LargeBlockCache::Block block;  // what holds them
};

struct State {
  std::mutex mutex;
  // data pointer → its allocation (the data pointer is the context)
  std::unordered_map<void*, Allocation> allocations;
  // Large blocks kept for the next step, where the heap is kept (runners/heap_policy.h).
  LargeBlockCache large_blocks{
      heap_policy() == "retained" ? kMmapThreshold : std::numeric_limits<size_t>::max(),
      &allocate_block, &c10::free_cpu};
  std::atomic<size_t> live{0};
  std::atomic<size_t> peak{0};
  std::atomic<size_t> budget{0};
  std::string budget_why;  // set_budget's `why`; under `mutex`
};

State& state() {
  static State* s = new State();  // never destroyed: tensors may be freed during exit
  return *s;
}

void release(void* p) {
  if (p == nullptr) return;
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.find(p);
    if (it != s.allocations.end()) {
      const Allocation a = it->second;
      s.allocations.erase(it);
      s.live -= a.bytes;
      if (a.block.capacity >= s.large_blocks.cached_from()) {
        s.large_blocks.give_back(a.block);
        return;
      }
    }
  }
  c10::free_cpu(p);  // a small block: the heap keeps it (runners/heap_policy.h)
}

class Allocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    State& s = state();
    const size_t budget = s.budget.load();
    const size_t live = s.live.load();
    if (budget != 0 && live + n > budget) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, TrackingAllocator::instance().budget_why(), ": ",
                       live, " bytes live, ", n, " more requested");
    }
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    LargeBlockCache::Block block;
    if (n < s.large_blocks.cached_from()) block = {c10::alloc_cpu(n), n};
    size_t now = 0;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (block.data == nullptr) block = s.large_blocks.take(n, s.live.load());
      s.allocations[block.data] = {n, block};
      now = (s.live += n);
    }
    void* p = block.data;
    size_t peak = s.peak.load();
    while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
    }
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};

}  // namespace

struct TrackingAllocator::Impl {
  Allocator allocator;
};

TrackingAllocator::TrackingAllocator() : impl_(new Impl()) {
  keep_freed_memory();  // before the first tensor: every step of this process on the same heap
  c10::SetCPUAllocator(&impl_->allocator, kPriority);
}

TrackingAllocator& TrackingAllocator::instance() {
  static TrackingAllocator* instance = new TrackingAllocator();
  return *instance;
}

size_t TrackingAllocator::live_bytes() const { return state().live.load(); }
size_t TrackingAllocator::peak_bytes() const { return state().peak.load(); }
size_t TrackingAllocator::cached_bytes() const {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().large_blocks.cached_bytes();
}
void TrackingAllocator::release_cached_blocks() {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().large_blocks.release_all();
}
void TrackingAllocator::reset_peak() { state().peak = state().live.load(); }
void TrackingAllocator::set_budget(size_t bytes, std::string why) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.budget_why = std::move(why);
  s.budget = bytes;
}
size_t TrackingAllocator::budget() const { return state().budget.load(); }
std::string TrackingAllocator::budget_why() const {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.budget_why.empty()) return s.budget_why;
  return "slapo memory budget of " + std::to_string(s.budget.load()) + " bytes exceeded";
}

}  // namespace slapo::runners
