#include "runners/token_batches.h"

#include <fstream>
#include <iterator>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"

namespace slapo::runners {

TokenBatches::TokenBatches(const Workload& w, const models::ModelSpec& spec, int64_t batch,
                           int64_t seq)
    : spec_(spec), batch_(batch), seq_(seq) {
  const int64_t vocab = spec.vocab;
  torch::manual_seed(w.seed + 1);
  if (w.data.empty()) return;
  std::ifstream in(w.data, std::ios::binary);
  SLAPO_CHECK(in.good(), ErrorCode::kNotFound, "workload data: cannot open ", w.data);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool u16 = w.data_dtype == "uint16";
  const size_t width = u16 ? 2 : 4;
  const size_t n = bytes.size() / width;
  SLAPO_CHECK(n >= static_cast<size_t>(batch * seq + 1), ErrorCode::kInvalidArgument,
              "workload data ", w.data, ": ", n, " tokens, fewer than one batch (", batch * seq + 1,
              ")");
  data_ = torch::empty({static_cast<int64_t>(n)}, torch::kLong);
  auto* out = data_.data_ptr<int64_t>();
  for (size_t i = 0; i < n; ++i) {
    out[i] = u16 ? *reinterpret_cast<const uint16_t*>(&bytes[i * 2])
                 : *reinterpret_cast<const int32_t*>(&bytes[i * 4]);
  }
  SLAPO_CHECK(data_.max().item<int64_t>() < vocab && data_.min().item<int64_t>() >= 0,
              ErrorCode::kInvalidArgument, "workload data ", w.data, ": token ids outside [0, ",
              vocab, ")");
}

models::TrainingBatch TokenBatches::next() { return models::training_batch(spec_, window()); }

torch::Tensor TokenBatches::window() {
  if (!data_.defined()) return torch::randint(spec_.vocab, {batch_, seq_ + 1}, torch::kLong);
  const int64_t span = batch_ * seq_ + 1;
  if (offset_ + span > data_.size(0)) offset_ = 0;
  // Sample i reads tokens [offset + i·seq, offset + (i+1)·seq] (one more for its last target).
  torch::Tensor w = data_.narrow(0, offset_, span).as_strided({batch_, seq_ + 1}, {seq_, 1});
  offset_ += batch_ * seq_;
  return w;
}

}  // namespace slapo::runners
