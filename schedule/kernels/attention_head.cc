#include "schedule/kernels/attention_head.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "schedule/kernels/simd_dispatch.h"
#include "schedule/kernels/simd_math.h"

namespace slapo::schedule {

namespace {

using simd::exp_nonpositive;

#define SLAPO_INLINE __attribute__((always_inline)) inline

// y[0..n) += w · x[0..n)
SLAPO_INLINE void axpy(float w, const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}

SLAPO_INLINE float dot(const float* __restrict x, const float* __restrict y, int64_t n) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * y[i];
  return sum;
}

// The sum and the maximum of x[0..n) in 16 interleaved partial results: loops GCC vectorizes (a
// plain left-to-right float sum or maximum it may not reorder, and leaves scalar).
SLAPO_INLINE float sum_of(const float* __restrict x, int64_t n) {
  float part[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) part[k] += x[i + k];
  float sum = 0;
  for (int k = 0; k < 16; ++k) sum += part[k];
  for (; i < n; ++i) sum += x[i];
  return sum;
}

SLAPO_INLINE float max_of(const float* __restrict x, int64_t n) {  // n ≥ 1
  float part[16];
  for (int k = 0; k < 16; ++k) part[k] = x[0];
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 16; ++k) part[k] = x[i + k] > part[k] ? x[i + k] : part[k];
  float most = x[0];
  for (int k = 0; k < 16; ++k) most = part[k] > most ? part[k] : most;
  for (; i < n; ++i) most = x[i] > most ? x[i] : most;
  return most;
}

// bt[d · n + c] = b[c · dim + d]: n rows of b, transposed (so that a row of scores is a sum of
// contiguous rows of bt, whose loop over columns vectorizes; and a block's columns become rows).
SLAPO_INLINE void transpose(const float* __restrict b, int64_t n, int64_t dim,
                            float* __restrict bt) {
  for (int64_t c = 0; c < n; ++c)
    for (int64_t d = 0; d < dim; ++d) bt[d * n + c] = b[c * dim + d];
}

// y[0..D) += Σ_{c ∈ [lo, hi)} w[c] · x[c · D ..]: a row of a block product. D known when compiled,
// so that the row's sums stay in registers over the whole range.
template <int D>
SLAPO_INLINE void accumulate_row_of(const float* __restrict w, int64_t lo, int64_t hi,
                                    const float* __restrict x, float* __restrict y) {
  float acc[D];
  for (int d = 0; d < D; ++d) acc[d] = y[d];
  for (int64_t c = lo; c < hi; ++c) {
    const float wc = w[c];
    const float* __restrict xc = x + c * D;
    for (int d = 0; d < D; ++d) acc[d] += wc * xc[d];
  }
  for (int d = 0; d < D; ++d) y[d] = acc[d];
}

// The same for any row length `dim` (heads of 32, 64 and 128 have their own loops).
SLAPO_INLINE void accumulate_row(const float* w, int64_t lo, int64_t hi, const float* x,
                                 int64_t dim, float* y) {
  switch (dim) {
    case 32: return accumulate_row_of<32>(w, lo, hi, x, y);
    case 64: return accumulate_row_of<64>(w, lo, hi, x, y);
    case 128: return accumulate_row_of<128>(w, lo, hi, x, y);
    default:
      for (int64_t c = lo; c < hi; ++c) axpy(w[c], x + c * dim, y, dim);
  }
}

// Four rows at once (w's rows `ldw` apart, y's D apart), all over [lo, hi): each row of x loaded
// feeds four multiply-adds.
template <int D>
SLAPO_INLINE void accumulate_4_rows_of(const float* __restrict w, int64_t ldw, int64_t lo,
                                       int64_t hi, const float* __restrict x, float* __restrict y) {
  float a0[D], a1[D], a2[D], a3[D];
  for (int d = 0; d < D; ++d) {
    a0[d] = y[d];
    a1[d] = y[D + d];
    a2[d] = y[2 * D + d];
    a3[d] = y[3 * D + d];
  }
  for (int64_t c = lo; c < hi; ++c) {
    const float w0 = w[c], w1 = w[ldw + c], w2 = w[2 * ldw + c], w3 = w[3 * ldw + c];
    const float* __restrict xc = x + c * D;
    for (int d = 0; d < D; ++d) {
      a0[d] += w0 * xc[d];
      a1[d] += w1 * xc[d];
      a2[d] += w2 * xc[d];
      a3[d] += w3 * xc[d];
    }
  }
  for (int d = 0; d < D; ++d) {
    y[d] = a0[d];
    y[D + d] = a1[d];
    y[2 * D + d] = a2[d];
    y[3 * D + d] = a3[d];
  }
}

// y[r] += Σ_{c ∈ [lo, hi)} w[r · ldw + c] · x[c] for the m rows of y (`dim` apart): a block
// product whose rows all see the same columns.
SLAPO_INLINE void accumulate_block(const float* w, int64_t ldw, int64_t m, int64_t lo, int64_t hi,
                                   const float* x, int64_t dim, float* y) {
  int64_t r = 0;
  if (dim == 32 || dim == 64) {
    for (; r + 4 <= m; r += 4) {
      if (dim == 32)
        accumulate_4_rows_of<32>(w + r * ldw, ldw, lo, hi, x, y + r * dim);
      else
        accumulate_4_rows_of<64>(w + r * ldw, ldw, lo, hi, x, y + r * dim);
    }
  }
  for (; r < m; ++r) accumulate_row(w + r * ldw, lo, hi, x, dim, y + r * dim);
}

// Four rows of scores of a whole block of NK keys, as scores_row_of below.
template <int NK>
SLAPO_INLINE void scores_4_rows_of(const float* __restrict a, int64_t dim,
                                   const float* __restrict bt, float scale, float* __restrict s) {
  float s0[NK] = {}, s1[NK] = {}, s2[NK] = {}, s3[NK] = {};
  for (int64_t d = 0; d < dim; ++d) {
    const float x0 = a[d], x1 = a[dim + d], x2 = a[2 * dim + d], x3 = a[3 * dim + d];
    const float* __restrict b = bt + d * NK;
    for (int c = 0; c < NK; ++c) {
      s0[c] += x0 * b[c];
      s1[c] += x1 * b[c];
      s2[c] += x2 * b[c];
      s3[c] += x3 * b[c];
    }
  }
  for (int c = 0; c < NK; ++c) {
    s[c] = s0[c] * scale;
    s[NK + c] = s1[c] * scale;
    s[2 * NK + c] = s2[c] * scale;
    s[3 * NK + c] = s3[c] * scale;
  }
}

// A row of scores of a whole block of NK keys: s[c] = scale · Σ_d a[d] · bt[d · NK + c], its sums
// in registers.
template <int NK>
SLAPO_INLINE void scores_row_of(const float* __restrict a, const float* __restrict bt, int64_t dim,
                                float scale, float* __restrict s) {
  float acc[NK] = {};
  for (int64_t d = 0; d < dim; ++d) {
    const float x = a[d];
    const float* __restrict b = bt + d * NK;
    for (int c = 0; c < NK; ++c) acc[c] += x * b[c];
  }
  for (int c = 0; c < NK; ++c) s[c] = acc[c] * scale;
}

constexpr int64_t kEdge = 64;  // the default block edge, whose whole blocks have their own loop

// s[r · nk + c] = scale · Σ_d a[r · dim + d] · bt[d · nk + c] for r < nq, c < nk. Whole blocks
// four rows at a time, so that each row of bt loaded feeds four multiply-adds.
SLAPO_INLINE void product(const float* __restrict a, int64_t nq, int64_t dim,
                          const float* __restrict bt, int64_t nk, float scale,
                          float* __restrict s) {
  if (nk == kEdge) {
    int64_t r = 0;
    for (; r + 4 <= nq; r += 4) scores_4_rows_of<kEdge>(a + r * dim, dim, bt, scale, s + r * nk);
    for (; r < nq; ++r) scores_row_of<kEdge>(a + r * dim, bt, dim, scale, s + r * nk);
    return;
  }
  // Other widths (a sequence's last block, a block size of the caller's): row by row.
  for (int64_t r = 0; r < nq; ++r) {
    float* __restrict sr = s + r * nk;
    for (int64_t c = 0; c < nk; ++c) sr[c] = 0;
    for (int64_t d = 0; d < dim; ++d) axpy(a[r * dim + d], bt + d * nk, sr, nk);
    for (int64_t c = 0; c < nk; ++c) sr[c] *= scale;
  }
}

// Which columns [lo, hi) of row i's block of keys from j0 (nk of them) the mask lets the row see
// (both within [0, nk]; none when lo ≥ hi).
struct Visible {
  int64_t lo, hi;
};
SLAPO_INLINE Visible visible(const HeadAttention& a, int64_t i, int64_t j0, int64_t nk) {
  const int64_t hi = a.causal ? std::clamp<int64_t>(i - j0 + 1, 0, nk) : nk;
  const int64_t lo = a.window > 0 ? std::clamp<int64_t>(i - a.window + 1 - j0, 0, nk) : 0;
  return {lo, hi};
}

// Every score of rows [i0, i0 + nq) × keys [j0, j0 + nk) is hidden.
SLAPO_INLINE bool hidden(const HeadAttention& a, int64_t i0, int64_t nq, int64_t j0, int64_t nk) {
  if (a.causal && j0 > i0 + nq - 1) return true;
  return a.window > 0 && i0 - (j0 + nk - 1) >= a.window;
}

SLAPO_INLINE void forward_head_body(const HeadAttention& a, float* out, float* lse) {
  const int64_t seq = a.seq, dim = a.dim, edge = std::min(a.edge, seq);
  std::vector<float> kt(dim * edge), s(edge * edge), keep(edge), acc(edge * dim), m(edge), l(edge);
  for (int64_t i0 = 0; i0 < seq; i0 += edge) {
    const int64_t nq = std::min(edge, seq - i0);
    std::fill(acc.begin(), acc.end(), 0.0f);
    std::fill(l.begin(), l.end(), 0.0f);
    std::fill(m.begin(), m.end(), -INFINITY);
    for (int64_t j0 = 0; j0 < seq; j0 += edge) {
      const int64_t nk = std::min(edge, seq - j0);
      if (hidden(a, i0, nq, j0, nk)) continue;
      transpose(a.k + j0 * dim, nk, dim, kt.data());
      product(a.q + i0 * dim, nq, dim, kt.data(), nk, a.scale, s.data());
      // Every row sees every key of the block (the ranges only widen or shift from row to row):
      // the value product is one block product.
      const Visible first = visible(a, i0, j0, nk), last = visible(a, i0 + nq - 1, j0, nk);
      const bool whole = first.lo == 0 && first.hi == nk && last.lo == 0 && last.hi == nk;
      for (int64_t r = 0; r < nq; ++r) {
        const auto [lo, hi] = visible(a, i0 + r, j0, nk);
        if (lo >= hi) continue;
        float* __restrict p = s.data() + r * nk;
        // The online softmax: the running maximum rescales what was summed before (nothing, the
        // first time: alpha 0).
        const float m_new = std::max(m[r], max_of(p + lo, hi - lo));
        const float alpha = std::isinf(m[r]) ? 0.0f : exp_nonpositive(m[r] - m_new);
        for (int64_t c = lo; c < hi; ++c) p[c] = exp_nonpositive(p[c] - m_new);
        // The normaliser is taken before dropout, as in the plain model.
        l[r] = l[r] * alpha + sum_of(p + lo, hi - lo);
        if (a.dropout) {
          attention_mask_row(*a.dropout, i0 + r, j0 + lo, hi - lo, keep.data());
          for (int64_t c = lo; c < hi; ++c) p[c] *= keep[c - lo];
        }
        float* __restrict acc_r = acc.data() + r * dim;
        for (int64_t d = 0; d < dim; ++d) acc_r[d] *= alpha;
        if (!whole) accumulate_row(p, lo, hi, a.v + j0 * dim, dim, acc_r);
        m[r] = m_new;
      }
      if (whole) accumulate_block(s.data(), nk, nq, 0, nk, a.v + j0 * dim, dim, acc.data());
    }
    for (int64_t r = 0; r < nq; ++r) {
      const float inv = 1.0f / l[r];
      float* __restrict out_r = out + (i0 + r) * dim;
      for (int64_t d = 0; d < dim; ++d) out_r[d] = acc[r * dim + d] * inv;
      lse[i0 + r] = m[r] + std::log(l[r]);
    }
  }
}

SLAPO_INLINE void backward_head_body(const HeadAttention& a, const float* out, const float* lse,
                                     const float* d_out, float* dq, float* dk, float* dv) {
  const int64_t seq = a.seq, dim = a.dim, edge = std::min(a.edge, seq);
  std::vector<float> kt(dim * edge), vt(dim * edge), s(edge * edge), dp(edge * edge),
      kept(edge * edge), wt(edge * edge), keep(edge);
  std::fill(dq, dq + seq * dim, 0.0f);
  std::fill(dk, dk + seq * dim, 0.0f);
  std::fill(dv, dv + seq * dim, 0.0f);
  // D_i = Σ_j P_ij dP_ij = dO_i · O_i (with dropout too: O = (P ∘ M) V).
  std::vector<float> row_dot(seq);
  for (int64_t i = 0; i < seq; ++i) row_dot[i] = dot(d_out + i * dim, out + i * dim, dim);
  for (int64_t i0 = 0; i0 < seq; i0 += edge) {
    const int64_t nq = std::min(edge, seq - i0);
    for (int64_t j0 = 0; j0 < seq; j0 += edge) {
      const int64_t nk = std::min(edge, seq - j0);
      if (hidden(a, i0, nq, j0, nk)) continue;
      transpose(a.k + j0 * dim, nk, dim, kt.data());
      transpose(a.v + j0 * dim, nk, dim, vt.data());
      product(a.q + i0 * dim, nq, dim, kt.data(), nk, a.scale, s.data());
      product(d_out + i0 * dim, nq, dim, vt.data(), nk, 1.0f, dp.data());  // of P ∘ M
      for (int64_t r = 0; r < nq; ++r) {
        const int64_t i = i0 + r;
        const auto [lo, hi] = visible(a, i, j0, nk);
        // Into s: dS = P ∘ (dP ∘ M − D) · scale, the softmax's backward times the scale; into
        // kept: P ∘ M, what the value product read. Both 0 where the mask hides.
        float* __restrict p = s.data() + r * nk;
        float* __restrict pm = kept.data() + r * nk;
        const float* __restrict g = dp.data() + r * nk;
        for (int64_t c = 0; c < lo; ++c) p[c] = pm[c] = 0;
        for (int64_t c = std::max(lo, hi); c < nk; ++c) p[c] = pm[c] = 0;
        if (lo >= hi) continue;
        // The block's probabilities again, from the row's log-sum-exp.
        for (int64_t c = lo; c < hi; ++c) p[c] = exp_nonpositive(p[c] - lse[i]);
        if (a.dropout) {
          attention_mask_row(*a.dropout, i, j0 + lo, hi - lo, keep.data());
          for (int64_t c = lo; c < hi; ++c) {
            pm[c] = p[c] * keep[c - lo];
            p[c] = p[c] * (g[c] * keep[c - lo] - row_dot[i]) * a.scale;
          }
        } else {
          for (int64_t c = lo; c < hi; ++c) {
            pm[c] = p[c];
            p[c] = p[c] * (g[c] - row_dot[i]) * a.scale;
          }
        }
        accumulate_row(p, lo, hi, a.k + j0 * dim, dim, dq + i * dim);  // dQ_i += dS K_j
      }
      // dV_j += (P ∘ M)ᵀ dO_i and dK_j += dSᵀ Q_i, a row of dv and dk per key.
      transpose(kept.data(), nq, nk, wt.data());
      accumulate_block(wt.data(), nq, nk, 0, nq, d_out + i0 * dim, dim, dv + j0 * dim);
      transpose(s.data(), nq, nk, wt.data());
      accumulate_block(wt.data(), nq, nk, 0, nq, a.q + i0 * dim, dim, dk + j0 * dim);
    }
  }
}

SLAPO_SIMD_VARIANTS(forward_head, (const HeadAttention& a, float* out, float* lse), (a, out, lse))
SLAPO_SIMD_VARIANTS(backward_head,
                    (const HeadAttention& a, const float* out, const float* lse, const float* d_out,
                     float* dq, float* dk, float* dv),
                    (a, out, lse, d_out, dq, dk, dv))

}  // namespace

void attention_head_forward(const HeadAttention& a, float* out, float* lse) {
  forward_head(a, out, lse);
}

void attention_head_backward(const HeadAttention& a, const float* out, const float* lse,
                             const float* d_out, float* dq, float* dk, float* dv) {
  backward_head(a, out, lse, d_out, dq, dk, dv);
}

}  // namespace slapo::schedule
