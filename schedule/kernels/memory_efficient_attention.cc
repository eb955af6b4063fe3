#include "schedule/kernels/memory_efficient_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"

namespace slapo::schedule {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// The square blocks of a seq × seq score matrix, and which of them the mask hides.
struct Blocking {
  int64_t seq = 0, edge = 0;
  AttentionMask mask;

  int64_t size(int64_t begin) const { return std::min(edge, seq - begin); }
  // Every score of rows [i0, i0 + nq) × columns [j0, j0 + nk) is hidden.
  bool hidden(int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
    if (mask.causal && j0 > i0 + nq - 1) return true;
    return mask.window > 0 && i0 - (j0 + nk - 1) >= mask.window;
  }
  // Some, but not all, of the block's scores are hidden: [nq, nk] bool, true where hidden; an
  // undefined tensor when none is.
  at::Tensor partial_mask(int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
    const bool crosses_diagonal = mask.causal && j0 + nk - 1 > i0;
    const bool crosses_window = mask.window > 0 && i0 + nq - 1 - j0 >= mask.window;
    if (!crosses_diagonal && !crosses_window) return at::Tensor();
    const at::Tensor i = at::arange(i0, i0 + nq, at::kLong).unsqueeze(1);
    const at::Tensor j = at::arange(j0, j0 + nk, at::kLong).unsqueeze(0);
    at::Tensor hide = at::zeros({nq, nk}, at::kBool);
    if (mask.causal) hide = hide.logical_or(j > i);
    if (mask.window > 0) hide = hide.logical_or((i - j) >= mask.window);
    return hide;
  }
  // The block's scores q_i · k_jᵀ · scale, hidden ones at −∞: [batch · heads, nq, nk].
  at::Tensor scores(const at::Tensor& qi, const at::Tensor& kj, int64_t i0, int64_t j0) const {
    const int64_t nq = qi.size(1), nk = kj.size(1);
    at::Tensor s = at::bmm(qi, kj.transpose(1, 2));
    if (mask.scale != 1.0) s.mul_(mask.scale);
    const at::Tensor hide = partial_mask(i0, nq, j0, nk);
    if (hide.defined()) s.masked_fill_(hide, kMinusInfinity);
    return s;
  }
};

struct Shape {
  int64_t batch, heads, seq, dim;
};

struct MemoryEfficientAttention : public torch::autograd::Function<MemoryEfficientAttention> {
  // q, k, v: [batch · heads, seq, dim], contiguous.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                               const at::Tensor& v, int64_t batch, bool causal, int64_t window,
                               double scale, int64_t edge, bool with_dropout, MaskSpec spec) {
    const int64_t bh = q.size(0), seq = q.size(1), dim = q.size(2);
    const Blocking blocks{seq, edge, AttentionMask{causal, window, scale}};
    at::Tensor out = at::empty_like(q);
    at::Tensor lse = at::empty({bh, seq, 1}, q.options());
    for (int64_t i0 = 0; i0 < seq; i0 += edge) {
      const int64_t nq = blocks.size(i0);
      const at::Tensor qi = q.narrow(1, i0, nq);
      at::Tensor m = at::full({bh, nq, 1}, kMinusInfinity, q.options());
      at::Tensor m_safe = at::zeros_like(m);
      at::Tensor l = at::zeros({bh, nq, 1}, q.options());
      at::Tensor acc = at::zeros({bh, nq, dim}, q.options());
      for (int64_t j0 = 0; j0 < seq; j0 += edge) {
        const int64_t nk = blocks.size(j0);
        if (blocks.hidden(i0, nq, j0, nk)) continue;
        at::Tensor p = blocks.scores(qi, k.narrow(1, j0, nk), i0, j0);
        // The online softmax: the running maximum (0 where a row has seen nothing yet, so that
        // exp(−∞ − 0) is 0 rather than NaN) rescales what was summed before.
        const at::Tensor m_new = at::maximum(m, std::get<0>(p.max(-1, /*keepdim=*/true)));
        const at::Tensor m_new_safe = m_new.masked_fill(at::isinf(m_new), 0.0);
        p.sub_(m_new_safe).exp_();
        const at::Tensor alpha = (m - m_new_safe).exp_();
        l.mul_(alpha).add_(p.sum(-1, /*keepdim=*/true));
        if (with_dropout)
          p.mul_(keyed_mask_block(spec, batch, bh / batch, seq, i0, nq, j0, nk).view(p.sizes()));
        acc.mul_(alpha).baddbmm_(p, v.narrow(1, j0, nk));
        m = m_new;
        m_safe = m_new_safe;
      }
      out.narrow(1, i0, nq).copy_(acc.div_(l));
      lse.narrow(1, i0, nq).copy_(m_safe.add_(l.log_()));
    }
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["batch"] = batch;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["window"] = window;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["edge"] = edge;
    ctx->saved_data["with_dropout"] = with_dropout;
    if (with_dropout) save_mask_spec(ctx, spec);
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const int64_t batch = ctx->saved_data["batch"].toInt();
    const bool with_dropout = ctx->saved_data["with_dropout"].toBool();
    const MaskSpec spec = with_dropout ? saved_mask_spec(ctx) : MaskSpec{};
    const int64_t bh = q.size(0), seq = q.size(1), edge = ctx->saved_data["edge"].toInt();
    const Blocking blocks{
        seq, edge,
        AttentionMask{ctx->saved_data["causal"].toBool(), ctx->saved_data["window"].toInt(),
                      ctx->saved_data["scale"].toDouble()}};
    const at::Tensor d_out = grad_outputs[0].contiguous();
    // D_i = Σ_j P_ij dP_ij = dO_i · O_i (with dropout too: O = (P ∘ M) V).
    const at::Tensor d = (d_out * out).sum(-1, /*keepdim=*/true);
    at::Tensor dq = at::zeros_like(q), dk = at::zeros_like(k), dv = at::zeros_like(v);
    for (int64_t i0 = 0; i0 < seq; i0 += edge) {
      const int64_t nq = blocks.size(i0);
      const at::Tensor qi = q.narrow(1, i0, nq), doi = d_out.narrow(1, i0, nq);
      const at::Tensor lse_i = lse.narrow(1, i0, nq), d_i = d.narrow(1, i0, nq);
      at::Tensor dqi = at::zeros_like(qi);
      for (int64_t j0 = 0; j0 < seq; j0 += edge) {
        const int64_t nk = blocks.size(j0);
        if (blocks.hidden(i0, nq, j0, nk)) continue;
        const at::Tensor kj = k.narrow(1, j0, nk), vj = v.narrow(1, j0, nk);
        // The block's probabilities again, from the row's log-sum-exp (hidden ones: exp(−∞) = 0).
        const at::Tensor p = blocks.scores(qi, kj, i0, j0).sub_(lse_i).exp_();
        at::Tensor dp = at::bmm(doi, vj.transpose(1, 2));  // of the dropped-out probabilities
        at::Tensor dv_j = dv.narrow(1, j0, nk);
        if (with_dropout) {
          const at::Tensor keep =
              keyed_mask_block(spec, batch, bh / batch, seq, i0, nq, j0, nk).view(p.sizes());
          dv_j.baddbmm_((p * keep).transpose(1, 2), doi);
          dp.mul_(keep);
        } else {
          dv_j.baddbmm_(p.transpose(1, 2), doi);
        }
        // The softmax's backward, times the scale: dS = P ∘ (dP − D) · scale.
        at::Tensor ds = dp.sub_(d_i).mul_(p);
        if (blocks.mask.scale != 1.0) ds.mul_(blocks.mask.scale);
        dqi.baddbmm_(ds, kj);
        dk.narrow(1, j0, nk).baddbmm_(ds.transpose(1, 2), qi);
      }
      dq.narrow(1, i0, nq).copy_(dqi);
    }
    return {dq,           dk,           dv,           at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// About 4 Mi scores for a block of every head: one block covers gpt-mini's whole sequence (128),
// blocks of 256 at seq 1024 with 64 heads × samples.
int64_t default_edge(int64_t heads_times_batch, int64_t seq) {
  int64_t edge = 512;
  while (edge > 32 && heads_times_batch * edge * edge > (int64_t{4} << 20)) edge /= 2;
  return std::min(edge, seq);
}

}  // namespace

at::Tensor memory_efficient_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const AttentionMask& mask,
                                      const std::optional<MaskSpec>& dropout, int64_t block) {
  SLAPO_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              ErrorCode::kInvalidArgument,
              "memory-efficient attention: q, k, v must be [batch, heads, seq, head_dim] of one "
              "shape, got ",
              q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  SLAPO_CHECK(q.scalar_type() == at::kFloat && q.device().is_cpu(), ErrorCode::kInvalidArgument,
              "memory-efficient attention: float32 CPU tensors only (got ", q.scalar_type(), ")");
  SLAPO_CHECK(block >= 0 && mask.window >= 0, ErrorCode::kInvalidArgument,
              "memory-efficient attention: block ", block, " and window ", mask.window,
              " must not be negative");
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), dim = q.size(3);
  if (q.numel() == 0) return at::empty_like(q);
  const int64_t edge = block > 0 ? std::min(block, seq) : default_edge(batch * heads, seq);
  auto fold = [&](const at::Tensor& t) {
    return t.reshape({batch * heads, seq, dim}).contiguous();
  };
  const bool with_dropout = dropout.has_value() && dropout->p > 0;
  const at::Tensor out = MemoryEfficientAttention::apply(
      fold(q), fold(k), fold(v), batch, mask.causal, mask.window, mask.scale, edge, with_dropout,
      with_dropout ? *dropout : MaskSpec{})[0];
  return out.view({batch, heads, seq, dim});
}

}  // namespace slapo::schedule
