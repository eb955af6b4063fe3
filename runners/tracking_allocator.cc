#include "runners/tracking_allocator.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>

#include "runners/heap_policy.h"

namespace slapo::runners {

namespace {

// LibTorch's CPU allocators are installed at priority 0; ours must be at least that.
constexpr uint8_t kPriority = 1;

struct State {
  std::mutex mutex;
  std::unordered_map<void*, size_t>
      sizes;  // data pointer → bytes (the data pointer is the context)
  std::atomic<size_t> live{0};
  std::atomic<size_t> peak{0};
  std::atomic<size_t> largest{0};  // the largest single allocation since the peak was reset
  std::atomic<size_t> budget{0};
};

State& state() {
  static State* s = new State();  // never destroyed: tensors may be freed during exit
  return *s;
}

void release(void* p) {
  if (p == nullptr) return;
  State& s = state();
  size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.sizes.find(p);
    if (it != s.sizes.end()) {
      n = it->second;
      s.sizes.erase(it);
    }
  }
  s.live -= n;
  c10::free_cpu(p);
}

class Allocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const override {
    State& s = state();
    const size_t budget = s.budget.load();
    const size_t live = s.live.load();
    if (budget != 0 && live + n > budget) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "slapo memory budget of ", budget,
                       " bytes exceeded: ", live, " bytes live, ", n, " more requested");
    }
    if (n == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    void* p = c10::alloc_cpu(n);
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.sizes[p] = n;
    }
    const size_t now = (s.live += n);
    size_t peak = s.peak.load();
    while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
    }
    size_t largest = s.largest.load();
    while (n > largest && !s.largest.compare_exchange_weak(largest, n)) {
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
size_t TrackingAllocator::largest_allocation() const { return state().largest.load(); }
void TrackingAllocator::reset_peak() {
  state().peak = state().live.load();
  state().largest = 0;
}
void TrackingAllocator::set_budget(size_t bytes) { state().budget = bytes; }
size_t TrackingAllocator::budget() const { return state().budget.load(); }

}  // namespace slapo::runners
