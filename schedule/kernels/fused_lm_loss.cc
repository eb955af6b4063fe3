#include "schedule/kernels/fused_lm_loss.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"
#include "schedule/runtime/communicator.h"

namespace slapo::schedule {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
  // hidden [N, H], weight [V_local, H], bias [V_local] or empty (autograd takes no undefined
  // inputs), targets [N] of the whole vocabulary; `shard` says which rows of it this rank holds.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden,
                               const at::Tensor& weight, const at::Tensor& bias_or_empty,
                               const at::Tensor& targets, int64_t ignore_index, int64_t chunk,
                               bool with_grad, VocabShard shard) {
    const int64_t n = hidden.size(0), local_vocab = weight.size(0);
    const at::Tensor bias = bias_or_empty.numel() > 0 ? bias_or_empty : at::Tensor();
    const at::Tensor valid = targets != ignore_index;
    const int64_t count = valid.sum().item<int64_t>();
    at::Tensor loss_sum = at::zeros({}, hidden.options().dtype(at::kDouble));
    at::Tensor grad_hidden, grad_weight, grad_bias;
    if (with_grad) {
      grad_hidden = at::empty_like(hidden);
      grad_weight = at::zeros_like(weight);
      if (bias.defined()) grad_bias = at::zeros_like(bias);
    }
    for (int64_t begin = 0; begin < n; begin += chunk) {
      const int64_t rows = std::min(chunk, n - begin);
      const at::Tensor h = hidden.narrow(0, begin, rows);
      const at::Tensor keep = valid.narrow(0, begin, rows);
      // The targets this rank's rows hold (index 0 stands in for the others; `mine` says which).
      const at::Tensor local_t = targets.narrow(0, begin, rows) - shard.begin;
      const at::Tensor mine = keep & (local_t >= 0) & (local_t < local_vocab);
      const at::Tensor index = at::where(mine, local_t, at::zeros_like(local_t)).unsqueeze(1);
      at::Tensor logits = bias.defined() ? at::addmm(bias, h, weight.t()) : at::mm(h, weight.t());
      at::Tensor max = std::get<0>(logits.max(1, /*keepdim=*/true));
      if (shard.group) shard.group->all_reduce(max, ReduceOp::kMax);
      // [Σ exp(logit − max), the target's logit]: one sum over the group for both.
      at::Tensor sums = at::empty({rows, 2}, logits.options());
      sums.select(1, 1).copy_(logits.gather(1, index).squeeze(1) * mine);
      logits.sub_(max).exp_();
      sums.select(1, 0).copy_(logits.sum(1));
      if (shard.group) shard.group->all_reduce(sums);
      const at::Tensor sum_exp = sums.select(1, 0).unsqueeze(1);
      const at::Tensor lse = max.squeeze(1) + sum_exp.squeeze(1).log();
      loss_sum += ((lse - sums.select(1, 1)) * keep).sum(at::kDouble);
      if (!with_grad) continue;
      // d(loss)/d(logits) = (softmax − onehot(target)) / count for kept tokens, 0 for ignored;
      // in place, in the chunk's logits (which hold exp(logit − max)).
      logits.div_(sum_exp);
      logits.scatter_add_(1, index, -mine.to(logits.scalar_type()).unsqueeze(1));
      logits.mul_(keep.unsqueeze(1).to(logits.scalar_type()) / static_cast<double>(count));
      at::Tensor grad_rows = grad_hidden.narrow(0, begin, rows);
      at::mm_out(grad_rows, logits, weight);
      grad_weight.addmm_(logits.t(), h);
      if (bias.defined()) grad_bias.add_(logits.sum(0));
    }
    // Each rank's part of the hidden states' gradient is through its rows of the vocabulary.
    if (with_grad && shard.group) shard.group->all_reduce(grad_hidden);
    ctx->saved_data["grad_hidden"] = grad_hidden;
    ctx->saved_data["grad_weight"] = grad_weight;
    ctx->saved_data["grad_bias"] = grad_bias;
    // No target given: the mean of nothing, NaN, as cross_entropy gives.
    return {(loss_sum / static_cast<double>(count)).to(hidden.scalar_type())};
  }

  // The gradients computed in forward, scaled by the loss's gradient in place and handed over (not
  // copied: a copy of the weight's gradient is as large as the weight). So the graph is
  // backwarded once; a second backward through a retained graph is refused.
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor g = grad_outputs[0];
    SLAPO_CHECK(!ctx->saved_data.count("backwarded"), ErrorCode::kInvalidArgument,
                "linear_cross_entropy: its graph was backwarded already (it hands its gradients "
                "over: retain_graph is not supported)");
    ctx->saved_data["backwarded"] = true;
    auto scaled = [&](const char* name) {
      at::Tensor t = ctx->saved_data[name].toTensor();
      ctx->saved_data.erase(name);
      return t.defined() ? t.mul_(g) : at::Tensor();
    };
    return {scaled("grad_hidden"), scaled("grad_weight"), scaled("grad_bias"), at::Tensor(),
            at::Tensor(),          at::Tensor(),          at::Tensor(),        at::Tensor()};
  }
};

}  // namespace

int64_t default_chunk_tokens(int64_t vocab) {
  return std::max<int64_t>(1, (int64_t{4} << 20) / std::max<int64_t>(1, vocab));
}

at::Tensor linear_cross_entropy(const at::Tensor& hidden, const at::Tensor& weight,
                                const at::Tensor& bias, const at::Tensor& targets,
                                int64_t ignore_index, int64_t chunk_tokens,
                                const VocabShard& shard) {
  SLAPO_CHECK(weight.dim() == 2 && hidden.size(-1) == weight.size(1), ErrorCode::kInvalidArgument,
              "linear_cross_entropy: hidden ", hidden.sizes(), " and weight ", weight.sizes(),
              " do not multiply");
  SLAPO_CHECK(targets.numel() * hidden.size(-1) == hidden.numel(), ErrorCode::kInvalidArgument,
              "linear_cross_entropy: ", targets.numel(), " targets for hidden states ",
              hidden.sizes());
  const int64_t vocab = weight.size(0);
  const int64_t chunk = chunk_tokens > 0 ? chunk_tokens : default_chunk_tokens(vocab);
  const bool with_grad =
      at::GradMode::is_enabled() && (hidden.requires_grad() || weight.requires_grad() ||
                                     (bias.defined() && bias.requires_grad()));
  const at::Tensor bias_or_empty = bias.defined() ? bias : at::empty({0}, weight.options());
  return LinearCrossEntropy::apply(hidden.reshape({-1, hidden.size(-1)}), weight, bias_or_empty,
                                   targets.reshape({-1}), ignore_index, chunk, with_grad, shard)[0];
}

}  // namespace slapo::schedule
