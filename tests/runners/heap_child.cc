// Run by HeapPolicyTest in a process of its own (the heap's settings are the process's, set once):
// a 24 MiB tensor allocated, touched and freed under the tracking allocator, and what glibc's heap
// held meanwhile, printed as "<bytes mapped apart from the heap while it lived> <bytes free in the
// heap after>".

#include <malloc.h>

#include <cstdio>

#include <torch/torch.h>

#include "runners/tracking_allocator.h"

int main() {
  slapo::runners::TrackingAllocator::instance();
  const struct mallinfo2 before = mallinfo2();
  size_t mapped_while_live = 0;
  {
    const torch::Tensor t = torch::ones({6 << 20});  // 24 MiB
    mapped_while_live = mallinfo2().hblkhd - before.hblkhd;
  }
  std::printf("%zu %zu\n", mapped_while_live, mallinfo2().fordblks);
  return 0;
}
