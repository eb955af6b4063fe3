// Run by HeapPolicyTest in a process of its own (the heap's settings are the process's, set once).
//
//   heap_child            a 24 MiB tensor allocated, touched and freed under the tracking
//                         allocator, and what glibc's heap held meanwhile, printed as "<bytes
//                         mapped apart from the heap while it lived> <bytes free in the heap
//                         after>"
//   heap_child faults     the page faults of writing 96 MiB of tensors of 8 MiB each, printed
//   heap_child faults touched   ... after touch_heap of those bytes
//   heap_child faults capped    ... after touch_heap of those bytes with 64 MiB said to be
//                               available (it takes half: 32 MiB), printed with the bytes it
//                               says it touched
//   heap_child steps      the page faults of writing the large tensors of a second "step" — 8 MiB
//                         tensors and two of 160 MiB (above the mmap threshold, and together
//                         above the heap's 256 MiB pad) alive at once —, after a first one

#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runners/heap_policy.h"
#include "runners/tracking_allocator.h"

namespace {

using slapo::runners::minor_page_faults;

// Tensors a training step might hold at its peak, written (the pages touched) and freed; returns
// the page faults of writing the large ones.
long step() {
  std::vector<torch::Tensor> held;
  for (int i = 0; i < 4; ++i) held.push_back(torch::ones({2 << 20}));  // 8 MiB
  const long before = minor_page_faults();
  for (int i = 0; i < 2; ++i) held.push_back(torch::ones({40 << 20}));  // 160 MiB
  return minor_page_faults() - before;
}

}  // namespace

int main(int argc, char** argv) {
  slapo::runners::TrackingAllocator::instance();
  if (argc > 1 && std::string(argv[1]) == "steps") {
    step();
    std::printf("%ld\n", step());
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "faults") {
    constexpr int64_t kFloats = 2 << 20;  // 8 MiB
    constexpr int kTensors = 12;
    torch::ones({1 << 16});  // the operator's first call: its thread pool, lazy initialisation
    const std::string touch = argc > 2 ? argv[2] : "";
    size_t touched = 0;
    if (touch == "touched")
      touched = slapo::runners::touch_heap(kTensors * kFloats * sizeof(float));
    else if (touch == "capped")
      touched = slapo::runners::touch_heap(kTensors * kFloats * sizeof(float), 64LL << 20);
    const long before = minor_page_faults();
    {
      std::vector<torch::Tensor> held;
      for (int i = 0; i < kTensors; ++i) held.push_back(torch::ones({kFloats}));
    }
    std::printf("%ld %zu\n", minor_page_faults() - before, touched);
    return 0;
  }
  const struct mallinfo2 before = mallinfo2();
  size_t mapped_while_live = 0;
  {
    const torch::Tensor t = torch::ones({6 << 20});  // 24 MiB
    mapped_while_live = mallinfo2().hblkhd - before.hblkhd;
  }
  std::printf("%zu %zu\n", mapped_while_live, mallinfo2().fordblks);
  return 0;
}
