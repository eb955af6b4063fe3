#!/usr/bin/env bash
# Two costs of this machine that the cost model's docs quote (docs/benchmarks.md, "Cost model",
# nineteenth session), each measured alone:
#   - a page fault of the kept heap (runners/heap_policy.h's settings): 400 MiB touched a byte a
#     page in 16 MiB blocks, freshly and again, three times in one process — what a profiled step
#     at a batch new to its process pays unless the heap is touched first (runners::touch_heap);
#   - packing gradients for data parallelism as schedule::average_gradients does (concatenated
#     into 25 MiB buckets, divided, copied back; the all-reduce left out), one thread, with
#     /usr/bin/python3's torch (the same ATen): 28 MB and 126 MB of gradients, median of 7.
#
#   bash benchmark/host_costs.sh
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/faults.c" <<'C'
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(void) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
  mallopt(M_TOP_PAD, 256 << 20);
  const size_t block = 16 << 20, blocks = 25, page = 4096;
  char* b[25];
  for (int round = 0; round < 3; ++round) {
    const double start = now_ms();
    for (size_t i = 0; i < blocks; ++i) {
      b[i] = malloc(block);
      for (size_t j = 0; j < block; j += page) ((volatile char*)b[i])[j] = 0;
    }
    const double ms = now_ms() - start;
    for (size_t i = blocks; i-- > 0;) free(b[i]);
    printf("page faults: 400 MiB touched %s: %.1f ms (%.2f us a page)\n",
           round == 0 ? "fresh" : "again", ms, ms * 1e3 / (blocks * block / page));
  }
  return 0;
}
C
cc -O2 "$work/faults.c" -o "$work/faults"
"$work/faults"
/usr/bin/python3 - <<'PY'
import time
import torch

torch.set_num_threads(1)
bucket = 25 << 20
for total_mb in (28, 126):
    left, grads = total_mb * (1 << 20) // 4, []
    while left > 0:  # gradients of a block's tensors' sizes
        grads.append(torch.randn(min(left, 590000)))
        left -= grads[-1].numel()

    def pack():
        i = 0
        while i < len(grads):
            end, size = i, 0
            while end < len(grads) and (end == i or size + 4 * grads[end].numel() <= bucket):
                size += 4 * grads[end].numel()
                end += 1
            flat = torch.cat([g.reshape(-1) for g in grads[i:end]])
            flat.div_(2)
            offset = 0
            for g in grads[i:end]:
                g.copy_(flat.narrow(0, offset, g.numel()).view_as(g))
                offset += g.numel()
            i = end

    pack()
    times = []
    for _ in range(7):
        start = time.perf_counter()
        pack()
        times.append(1e3 * (time.perf_counter() - start))
    times.sort()
    print(f"gradient packing: {total_mb} MB, median {times[3]:.1f} ms (fastest {times[0]:.1f})")
PY
