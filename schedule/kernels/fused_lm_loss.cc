#include "schedule/kernels/fused_lm_loss.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"

namespace slapo::schedule {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
  // hidden [N, H], weight [V, H], bias [V] or empty (autograd takes no undefined inputs),
  // targets [N].
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden,
                               const at::Tensor& weight, const at::Tensor& bias_or_empty,
                               const at::Tensor& targets, int64_t ignore_index, int64_t chunk,
                               bool with_grad) {
    const int64_t n = hidden.size(0);
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
      const at::Tensor t = targets.narrow(0, begin, rows);
      const at::Tensor keep = valid.narrow(0, begin, rows);
      at::Tensor logits = bias.defined() ? at::addmm(bias, h, weight.t()) : at::mm(h, weight.t());
      const at::Tensor lse = at::logsumexp(logits, 1, /*keepdim=*/true);
      const at::Tensor safe_t = at::where(keep, t, at::zeros_like(t)).unsqueeze(1);
      const at::Tensor picked = logits.gather(1, safe_t);
      loss_sum += ((lse - picked).squeeze(1) * keep).sum(at::kDouble);
      if (!with_grad) continue;
      // d(loss)/d(logits) = (softmax − onehot(target)) / count for kept tokens, 0 for ignored;
      // in place, in the chunk's logits.
      logits.sub_(lse).exp_();
      logits.scatter_add_(1, safe_t, at::full({rows, 1}, -1.0, logits.options()));
      logits.mul_(keep.unsqueeze(1).to(logits.scalar_type()) / static_cast<double>(count));
      at::Tensor grad_rows = grad_hidden.narrow(0, begin, rows);
      at::mm_out(grad_rows, logits, weight);
      grad_weight.addmm_(logits.t(), h);
      if (bias.defined()) grad_bias.add_(logits.sum(0));
    }
    ctx->saved_data["grad_hidden"] = grad_hidden;
    ctx->saved_data["grad_weight"] = grad_weight;
    ctx->saved_data["grad_bias"] = grad_bias;
    // No target given: the mean of nothing, NaN, as cross_entropy gives.
    return {(loss_sum / static_cast<double>(count)).to(hidden.scalar_type())};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const at::Tensor g = grad_outputs[0];
    auto scaled = [&](const char* name) {
      const at::Tensor t = ctx->saved_data[name].toTensor();
      return t.defined() ? t * g : at::Tensor();
    };
    return {scaled("grad_hidden"), scaled("grad_weight"), scaled("grad_bias"), at::Tensor(),
            at::Tensor(),          at::Tensor(),          at::Tensor()};
  }
};

}  // namespace

at::Tensor linear_cross_entropy(const at::Tensor& hidden, const at::Tensor& weight,
                                const at::Tensor& bias, const at::Tensor& targets,
                                int64_t ignore_index, int64_t chunk_tokens) {
  SLAPO_CHECK(weight.dim() == 2 && hidden.size(-1) == weight.size(1), ErrorCode::kInvalidArgument,
              "linear_cross_entropy: hidden ", hidden.sizes(), " and weight ", weight.sizes(),
              " do not multiply");
  SLAPO_CHECK(targets.numel() * hidden.size(-1) == hidden.numel(), ErrorCode::kInvalidArgument,
              "linear_cross_entropy: ", targets.numel(), " targets for hidden states ",
              hidden.sizes());
  const int64_t vocab = weight.size(0);
  const int64_t chunk =
      chunk_tokens > 0 ? chunk_tokens : std::max<int64_t>(1, (int64_t{4} << 20) / vocab);
  const bool with_grad =
      at::GradMode::is_enabled() && (hidden.requires_grad() || weight.requires_grad() ||
                                     (bias.defined() && bias.requires_grad()));
  const at::Tensor bias_or_empty = bias.defined() ? bias : at::empty({0}, weight.options());
  return LinearCrossEntropy::apply(hidden.reshape({-1, hidden.size(-1)}), weight, bias_or_empty,
                                   targets.reshape({-1}), ignore_index, chunk, with_grad)[0];
}

}  // namespace slapo::schedule
