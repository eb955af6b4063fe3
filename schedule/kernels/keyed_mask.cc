#include "schedule/kernels/keyed_mask.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/error.h"
#include "schedule/kernels/simd_dispatch.h"

namespace slapo::schedule {

namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t sample_key(const MaskSpec& s, int64_t sample) {
  return splitmix(
      splitmix(splitmix(splitmix(s.seed) ^ s.key.step) ^ static_cast<uint64_t>(sample)) ^
      static_cast<uint64_t>(s.independent ? s.rank : 0));
}

// Two rounds of a 32-bit integer hash ("lowbias32"), keyed by both halves of the sample's key.
__attribute__((always_inline)) inline uint32_t element_hash(uint32_t e, uint32_t k0, uint32_t k1) {
  uint32_t h = e * 0x9e3779b1u + k0;
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  h ^= k1;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// One row of `n` elements whose full-sample indices are e0, e0 + 1, ... (a loop per case, so each
// vectorizes without tests inside).
template <bool kBias, bool kResidual>
__attribute__((always_inline)) inline void row_loop(const float* __restrict x,
                                                    const float* __restrict bias,
                                                    const float* __restrict residual,
                                                    float* __restrict out, int64_t n, uint32_t e0,
                                                    uint32_t k0, uint32_t k1, uint32_t threshold,
                                                    float scale) {
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t h = element_hash(e0 + static_cast<uint32_t>(j), k0, k1);
    const float keep = (h >> 8) < threshold ? scale : 0.0f;
    const float v = (kBias ? x[j] + bias[j] : x[j]) * keep;
    out[j] = kResidual ? residual[j] + v : v;
  }
}

__attribute__((always_inline)) inline void row_body(const float* x, const float* bias,
                                                    const float* residual, float* out, int64_t n,
                                                    uint32_t e0, uint32_t k0, uint32_t k1,
                                                    uint32_t threshold, float scale) {
  if (bias && residual)
    return row_loop<true, true>(x, bias, residual, out, n, e0, k0, k1, threshold, scale);
  if (bias) return row_loop<true, false>(x, bias, residual, out, n, e0, k0, k1, threshold, scale);
  if (residual)
    return row_loop<false, true>(x, bias, residual, out, n, e0, k0, k1, threshold, scale);
  row_loop<false, false>(x, bias, residual, out, n, e0, k0, k1, threshold, scale);
}

// The mask values themselves along one row.
__attribute__((always_inline)) inline void mask_row_body(float* __restrict out, int64_t n,
                                                         uint32_t e0, uint32_t k0, uint32_t k1,
                                                         uint32_t threshold, float scale) {
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t h = element_hash(e0 + static_cast<uint32_t>(j), k0, k1);
    out[j] = (h >> 8) < threshold ? scale : 0.0f;
  }
}

SLAPO_SIMD_VARIANTS(mask_row,
                    (float* out, int64_t n, uint32_t e0, uint32_t k0, uint32_t k1,
                     uint32_t threshold, float scale),
                    (out, n, e0, k0, k1, threshold, scale))

SLAPO_SIMD_VARIANTS(row,
                    (const float* x, const float* bias, const float* residual, float* out,
                     int64_t n, uint32_t e0, uint32_t k0, uint32_t k1, uint32_t threshold,
                     float scale),
                    (x, bias, residual, out, n, e0, k0, k1, threshold, scale))

}  // namespace

MaskSpec mask_spec_in_scope(double p, int64_t seed, int64_t axis, int64_t parts, int64_t rank,
                            bool independent) {
  SLAPO_CHECK(p >= 0 && p < 1, ErrorCode::kInvalidArgument, "dropout probability ", p,
              " is not in [0, 1)");
  MaskSpec spec;
  spec.p = p;
  spec.seed = static_cast<uint64_t>(seed);
  const DropoutKey scope = current_dropout_key();
  spec.key = scope.active ? scope : fresh_dropout_key();
  spec.axis = axis;
  spec.parts = parts;
  spec.rank = rank;
  spec.independent = independent;
  return spec;
}

at::Tensor apply_keyed_mask(const MaskSpec& spec, const at::Tensor& x_in, const at::Tensor& bias_in,
                            const at::Tensor& residual_in) {
  SLAPO_CHECK(x_in.scalar_type() == at::kFloat && x_in.device().is_cpu(),
              ErrorCode::kInvalidArgument, "dropout: float32 CPU tensors only (got ",
              x_in.scalar_type(), ")");
  SLAPO_CHECK(x_in.dim() >= 2, ErrorCode::kInvalidArgument, "dropout: expects [batch, ...], got ",
              x_in.sizes());
  SLAPO_CHECK(spec.parts == 1 || (spec.axis >= 1 && spec.axis < x_in.dim()),
              ErrorCode::kInvalidArgument, "dropout: sharded along axis ", spec.axis,
              " but the input has shape ", x_in.sizes());
  const at::Tensor x = x_in.contiguous();
  const at::Tensor bias = bias_in.defined() ? bias_in.contiguous() : bias_in;
  const at::Tensor residual = residual_in.defined() ? residual_in.contiguous() : residual_in;
  SLAPO_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == x.size(-1)),
              ErrorCode::kInvalidArgument, "dropout: bias ", bias.sizes(),
              " does not match the last axis of ", x.sizes());
  SLAPO_CHECK(!residual.defined() || residual.sizes() == x.sizes(), ErrorCode::kInvalidArgument,
              "dropout: residual ", residual.sizes(), " does not have the shape ", x.sizes());
  at::Tensor out = at::empty_like(x);
  if (x.numel() == 0) return out;

  const int64_t width = x.size(-1);
  const int64_t per_sample = x.numel() / x.size(0);
  const int64_t rows = x.numel() / width, rows_per_sample = per_sample / width;
  // Full-sample coordinates of a local index: [outer, mid (the sharded axis), inner].
  const bool slice = spec.parts > 1 && !spec.independent;
  int64_t mid = 1, inner = 1;
  if (slice) {
    mid = x.size(spec.axis);
    for (int64_t d = spec.axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  }
  SLAPO_CHECK(per_sample * (slice ? spec.parts : 1) < (int64_t{1} << 32),
              ErrorCode::kInvalidArgument, "dropout: a sample of ", per_sample,
              " elements is too large for 32-bit element indices");
  const uint32_t threshold = static_cast<uint32_t>((1.0 - spec.p) * double(1 << 24) + 0.5);
  const float scale = static_cast<float>(1.0 / (1.0 - spec.p));
  const float* xp = x.data_ptr<float>();
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  const float* rp = residual.defined() ? residual.data_ptr<float>() : nullptr;
  float* op = out.data_ptr<float>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 4096 / width), [&](int64_t begin, int64_t end) {
    int64_t sample = -1;
    uint32_t k0 = 0, k1 = 0;
    for (int64_t r = begin; r < end; ++r) {
      if (r / rows_per_sample != sample) {
        sample = r / rows_per_sample;
        const uint64_t key = sample_key(spec, spec.key.sample_offset + sample);
        k0 = static_cast<uint32_t>(key);
        k1 = static_cast<uint32_t>(key >> 32);
      }
      int64_t local = (r % rows_per_sample) * width;
      if (slice) {
        const int64_t o = local / (mid * inner), a = (local / inner) % mid, in = local % inner;
        local = (o * mid * spec.parts + spec.rank * mid + a) * inner + in;
      }
      const int64_t offset = r * width;
      row(xp + offset, bp, rp ? rp + offset : nullptr, op + offset, width,
          static_cast<uint32_t>(local), k0, k1, threshold, scale);
    }
  });
  return out;
}

void save_mask_spec(torch::autograd::AutogradContext* ctx, const MaskSpec& spec) {
  auto& d = ctx->saved_data;
  d["mask_p"] = spec.p;
  d["mask_seed"] = static_cast<int64_t>(spec.seed);
  d["mask_step"] = static_cast<int64_t>(spec.key.step);
  d["mask_offset"] = spec.key.sample_offset;
  d["mask_axis"] = spec.axis;
  d["mask_parts"] = spec.parts;
  d["mask_rank"] = spec.rank;
  d["mask_independent"] = spec.independent;
}

MaskSpec saved_mask_spec(torch::autograd::AutogradContext* ctx) {
  auto& d = ctx->saved_data;
  MaskSpec spec;
  spec.p = d["mask_p"].toDouble();
  spec.seed = static_cast<uint64_t>(d["mask_seed"].toInt());
  spec.key =
      DropoutKey{true, static_cast<uint64_t>(d["mask_step"].toInt()), d["mask_offset"].toInt()};
  spec.axis = d["mask_axis"].toInt();
  spec.parts = d["mask_parts"].toInt();
  spec.rank = d["mask_rank"].toInt();
  spec.independent = d["mask_independent"].toBool();
  return spec;
}

at::Tensor keyed_mask(const MaskSpec& spec, const at::Tensor& x) {
  return apply_keyed_mask(spec, at::ones_like(x, x.options().dtype(at::kFloat)), {}, {});
}

AttentionMaskRows attention_mask_rows(const MaskSpec& spec, int64_t heads, int64_t seq,
                                      int64_t sample, int64_t head) {
  SLAPO_CHECK(spec.parts == 1 || spec.axis == 1, ErrorCode::kInvalidArgument,
              "attention dropout: probabilities sharded along axis ", spec.axis,
              ", not along the heads (axis 1)");
  // The full sample's heads: this rank's are the slice `rank` of `parts` unless it draws its own.
  const bool slice = spec.parts > 1 && !spec.independent;
  const int64_t full_heads = slice ? heads * spec.parts : heads;
  const int64_t first_head = slice ? spec.rank * heads : 0;
  SLAPO_CHECK(full_heads * seq * seq < (int64_t{1} << 32), ErrorCode::kInvalidArgument,
              "attention dropout: ", full_heads, " heads of ", seq, " × ", seq,
              " probabilities are too many for 32-bit element indices");
  const uint64_t key = sample_key(spec, spec.key.sample_offset + sample);
  AttentionMaskRows rows;
  rows.k0 = static_cast<uint32_t>(key);
  rows.k1 = static_cast<uint32_t>(key >> 32);
  rows.threshold = static_cast<uint32_t>((1.0 - spec.p) * double(1 << 24) + 0.5);
  rows.scale = static_cast<float>(1.0 / (1.0 - spec.p));
  rows.seq = seq;
  rows.head_base = (first_head + head) * seq * seq;
  return rows;
}

void attention_mask_row(const AttentionMaskRows& rows, int64_t row, int64_t col0, int64_t n,
                        float* out) {
  mask_row(out, n, static_cast<uint32_t>(rows.head_base + row * rows.seq + col0), rows.k0, rows.k1,
           rows.threshold, rows.scale);
}

}  // namespace slapo::schedule
