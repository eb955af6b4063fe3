#include "schedule/kernels/memory_efficient_attention.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"
#include "schedule/kernels/attention_head.h"

namespace slapo::schedule {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The arguments of one (sample, head) of [batch · heads, seq, dim] tensors.
HeadAttention head_of(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t x,
                      const AttentionMask& mask, int64_t edge) {
  const int64_t seq = q.size(1), dim = q.size(2);
  HeadAttention h;
  h.q = q.data_ptr<float>() + x * seq * dim;
  h.k = k.data_ptr<float>() + x * seq * dim;
  h.v = v.data_ptr<float>() + x * seq * dim;
  h.seq = seq;
  h.dim = dim;
  h.causal = mask.causal;
  h.window = mask.window;
  h.scale = static_cast<float>(mask.scale);
  h.edge = edge;
  return h;
}

// Runs f(x, head x) for every (sample, head) x of the folded tensors — its dropout mask in it when
// there is one — the heads in parallel.
template <typename F>
void for_each_head(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t batch,
                   const AttentionMask& mask, int64_t edge, bool with_dropout, const MaskSpec& spec,
                   F&& f) {
  const int64_t bh = q.size(0), heads = bh / batch, seq = q.size(1);
  if (with_dropout) attention_mask_rows(spec, heads, seq, 0, 0);  // throws here, not in a thread
  at::parallel_for(0, bh, 1, [&](int64_t begin, int64_t end) {
    for (int64_t x = begin; x < end; ++x) {
      HeadAttention h = head_of(q, k, v, x, mask, edge);
      AttentionMaskRows rows;
      if (with_dropout) {
        rows = attention_mask_rows(spec, heads, seq, x / heads, x % heads);
        h.dropout = &rows;
      }
      f(x, h);
    }
  });
}

struct MemoryEfficientAttention : public torch::autograd::Function<MemoryEfficientAttention> {
  // q, k, v: [batch · heads, seq, dim], contiguous.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                               const at::Tensor& v, int64_t batch, bool causal, int64_t window,
                               double scale, int64_t edge, bool with_dropout, MaskSpec spec) {
    const int64_t bh = q.size(0), seq = q.size(1), dim = q.size(2);
    const AttentionMask mask{causal, window, scale};
    at::Tensor out = at::empty_like(q);
    at::Tensor lse = at::empty({bh, seq}, q.options());
    float* out_p = out.data_ptr<float>();
    float* lse_p = lse.data_ptr<float>();
    for_each_head(q, k, v, batch, mask, edge, with_dropout, spec,
                  [&](int64_t x, const HeadAttention& h) {
                    attention_head_forward(h, out_p + x * seq * dim, lse_p + x * seq);
                  });
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
    const AttentionMask mask{ctx->saved_data["causal"].toBool(), ctx->saved_data["window"].toInt(),
                             ctx->saved_data["scale"].toDouble()};
    const int64_t seq = q.size(1), dim = q.size(2);
    const at::Tensor d_out = grad_outputs[0].contiguous();
    at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    const float *out_p = out.data_ptr<float>(), *lse_p = lse.data_ptr<float>(),
                *d_out_p = d_out.data_ptr<float>();
    float *dq_p = dq.data_ptr<float>(), *dk_p = dk.data_ptr<float>(), *dv_p = dv.data_ptr<float>();
    for_each_head(q, k, v, batch, mask, ctx->saved_data["edge"].toInt(), with_dropout, spec,
                  [&](int64_t x, const HeadAttention& h) {
                    const int64_t at = x * seq * dim;
                    attention_head_backward(h, out_p + at, lse_p + x * seq, d_out_p + at, dq_p + at,
                                            dk_p + at, dv_p + at);
                  });
    return {dq,           dk,           dv,           at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// A block of 64 × 64 scores (16 KiB) and the 64 rows of k and v it reads stay in the first-level
// caches; smaller blocks also skip more of a causal mask's hidden half.
constexpr int64_t kDefaultEdge = 64;

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
  const int64_t edge = std::min(block > 0 ? block : kDefaultEdge, seq);
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
