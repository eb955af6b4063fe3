#pragma once
// Data parallelism: every rank of a data-parallel group trains the same parameters on other
// samples; after backward their gradients are averaged. Gradients travel in buckets (one flat
// all-reduce per bucket of at most `bucket_bytes`) rather than one collective per tensor, which on
// Gloo costs a round trip each.

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "schedule/runtime/communicator.h"

namespace slapo::schedule {

constexpr int64_t kDefaultBucketBytes = 25 << 20;

// Replaces each parameter's gradient by its mean over `group` (an undefined gradient counts as
// zeros and becomes defined, so every rank sends the same buckets). Every rank must pass the same
// parameters in the same order.
void average_gradients(const std::vector<at::Tensor>& params, Communicator& group,
                       int64_t bucket_bytes = kDefaultBucketBytes);

// The same, summing instead of averaging: for a tensor used by two pipeline stages (a tied
// embedding and LM head), whose gradient is the sum of both uses.
void sum_gradients(const std::vector<at::Tensor>& params, Communicator& group,
                   int64_t bucket_bytes = kDefaultBucketBytes);

}  // namespace slapo::schedule
