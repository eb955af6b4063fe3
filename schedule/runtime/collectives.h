#pragma once
// Collectives as autograd functions, in Megatron's conjugate pairs: what one does in forward, its
// conjugate does to the gradient in backward, so a sharded model's gradients equal the original's.
//
//   function                 forward                          backward
//   copy_to_group            identity                         all-reduce
//   reduce_from_group        all-reduce                       identity
//   gather_from_group(a)     all-gather, concatenate on a     keep this rank's slice
//   split_to_group(a)        keep this rank's slice on a      all-gather
//   reduce_scatter_group(a)  all-reduce, keep slice on a      all-gather
//   gather_reduce_scatter(a) all-gather on a                  reduce-scatter
//
// Gloo in this LibTorch has no reduce_scatter: it is all-reduce followed by a slice (twice the
// traffic of a real one; documented in docs/distributed.md).

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "schedule/runtime/communicator.h"

namespace slapo::schedule {

at::Tensor copy_to_group(const at::Tensor& x, Communicator& comm);
at::Tensor reduce_from_group(const at::Tensor& x, Communicator& comm);
at::Tensor gather_from_group(const at::Tensor& x, Communicator& comm, int64_t axis);
at::Tensor split_to_group(const at::Tensor& x, Communicator& comm, int64_t axis);
at::Tensor reduce_scatter_group(const at::Tensor& x, Communicator& comm, int64_t axis);
at::Tensor gather_reduce_scatter(const at::Tensor& x, Communicator& comm, int64_t axis);

// Plain (non-autograd) helpers shared by the functions above and the runtime.
at::Tensor all_gather_cat(const at::Tensor& x, Communicator& comm, int64_t axis);
at::Tensor own_slice(const at::Tensor& x, Communicator& comm, int64_t axis);

}  // namespace slapo::schedule
