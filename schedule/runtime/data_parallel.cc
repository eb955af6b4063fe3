#include "schedule/runtime/data_parallel.h"

#include <ATen/ATen.h>

namespace slapo::schedule {

namespace {

void reduce_gradients(const std::vector<at::Tensor>& params, Communicator& group,
                      int64_t bucket_bytes, bool average) {
  if (group.size() == 1) return;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) {
    at::Tensor& g = p.mutable_grad();
    if (!g.defined()) g = at::zeros_like(p);
    grads.push_back(g);
  }
  size_t i = 0;
  while (i < grads.size()) {
    // A bucket: consecutive gradients of one dtype up to bucket_bytes (at least one).
    size_t end = i;
    int64_t bytes = 0;
    while (end < grads.size() && grads[end].scalar_type() == grads[i].scalar_type() &&
           (end == i || bytes + static_cast<int64_t>(grads[end].nbytes()) <= bucket_bytes)) {
      bytes += static_cast<int64_t>(grads[end].nbytes());
      ++end;
    }
    std::vector<at::Tensor> flat_parts;
    for (size_t j = i; j < end; ++j) flat_parts.push_back(grads[j].reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    group.all_reduce(flat);
    if (average) flat.div_(group.size());
    int64_t offset = 0;
    for (size_t j = i; j < end; ++j) {
      const int64_t n = grads[j].numel();
      grads[j].copy_(flat.narrow(0, offset, n).view_as(grads[j]));
      offset += n;
    }
    i = end;
  }
}

}  // namespace

void average_gradients(const std::vector<at::Tensor>& params, Communicator& group,
                       int64_t bucket_bytes) {
  reduce_gradients(params, group, bucket_bytes, /*average=*/true);
}

void sum_gradients(const std::vector<at::Tensor>& params, Communicator& group,
                   int64_t bucket_bytes) {
  reduce_gradients(params, group, bucket_bytes, /*average=*/false);
}

}  // namespace slapo::schedule
