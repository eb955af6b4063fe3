#pragma once
// What the process heap does with the memory tensors free: keep it for the next step.
//
// glibc's malloc gives a large block back to the system as soon as it is freed (a block above
// the mmap threshold is unmapped, a free top of the heap is trimmed), so every training step
// faults its activations' pages in again. Kept instead — blocks up to 32 MiB from the heap,
// nothing trimmed, the heap grown 256 MiB at a time — a training step of gpt-mini at 16 samples
// took 6.5% less on this machine and bert-mini's 9.9%, for 8–9% more resident memory
// (docs/benchmarks.md, "The heap"), and the attention variants' differences inside a model
// became what they are in a block alone (the block probe's blind spot, docs/cost-model.md).
// Tensor bytes, budgets and peaks are the tracking allocator's and do not change.
//
// Not applied — glibc's defaults, or what the environment set, stay — when SLAPO_HEAP=system,
// when the environment configures malloc itself (GLIBC_TUNABLES naming glibc.malloc, a MALLOC_*
// variable), or off glibc.

#include <cstddef>
#include <optional>
#include <string>

#include "runners/available_memory.h"

namespace slapo::runners {

// glibc's largest mmap threshold on 64 bits (DEFAULT_MMAP_THRESHOLD_MAX): blocks up to it come
// from the kept heap; a larger one (a big vocabulary's logits) is mapped on its own — and kept by
// the tracking allocator instead (runners/large_block_cache.h).
inline constexpr size_t kMmapThreshold = 32 << 20;

// "retained" when keep_freed_memory() applies the policy in this environment, "system" when it
// leaves the heap as it is. A pure function of the environment: the machine fingerprint reads it
// in a process that runs no model.
std::string heap_policy();

// Empty when SLAPO_HEAP is unset, "retained" or "system"; otherwise the one-line reason, for the
// command line to refuse it (a misspelt "system" would leave the heap kept, silently).
std::string heap_choice_error();

// Applies the policy once per process (later calls do nothing); called when the tracking
// allocator is installed, before any tensor.
void keep_freed_memory();

// Makes `bytes` of the kept heap resident before a step that will need them: takes them in blocks
// below the mmap threshold, writes a byte to each page, and gives them back to the heap, which
// keeps them. The next step's tensors then find their pages in memory — as every timed step of a
// trial does — instead of faulting them in while it is timed. Does nothing when the heap is not
// kept (the pages would go back to the system at once).
//
// Takes at most half of `available` (available_memory_bytes(); unknown: no cap but malloc's): the
// bytes come from a line's extrapolation (runners/sweep_steps.h), and a guess must not take what
// the step itself, or the machine, needs. Returns the bytes made resident (whole blocks of 16 MiB,
// the last one rounding up).
size_t touch_heap(size_t bytes, std::optional<long long> available = available_memory_bytes());

// This process's minor page faults so far (pages mapped in on first touch).
long minor_page_faults();

}  // namespace slapo::runners
