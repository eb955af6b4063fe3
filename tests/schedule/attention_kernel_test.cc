// The memory-efficient attention kernel against plain attention written with ATen: outputs and the
// gradients of q, k and v, with and without dropout (the keyed masks of the whole tensor, on a
// tensor-parallel slice of the heads too), causal, bidirectional and local, at block sizes that
// divide the sequence, that do not, and that hold it whole, at every SIMD level of this CPU.

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <torch/torch.h>

#include "schedule/kernels/keyed_mask.h"
#include "schedule/kernels/memory_efficient_attention.h"
#include "schedule/kernels/simd_dispatch.h"

namespace slapo::schedule {
namespace {

// softmax(q·kᵀ·scale + mask), dropped out with the keyed mask of the whole tensor, times v.
torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const AttentionMask& mask,
                              const std::optional<MaskSpec>& dropout) {
  const int64_t s = q.size(2);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * mask.scale;
  const torch::Tensor i = torch::arange(s).unsqueeze(1), j = torch::arange(s).unsqueeze(0);
  torch::Tensor hide = torch::zeros({s, s}, torch::kBool);
  if (mask.causal) hide = hide.logical_or(j > i);
  if (mask.window > 0) hide = hide.logical_or((i - j) >= mask.window);
  torch::Tensor probs = torch::softmax(scores.masked_fill(hide, -INFINITY), -1);
  if (dropout) probs = probs * keyed_mask(*dropout, probs);
  return torch::matmul(probs, v);
}

struct Case {
  const char* name;
  AttentionMask mask;
  double p;           // dropout on the probabilities (0: none)
  int64_t parts = 1;  // the heads are slice `rank` of `parts` of the model's
  int64_t rank = 0;
};

class MemoryEfficientAttentionTest : public ::testing::TestWithParam<simd::Level> {
 protected:
  void SetUp() override { previous_ = simd::set_cap(GetParam()); }
  void TearDown() override { simd::set_cap(previous_); }
  simd::Level previous_ = simd::Level::kAvx512;
};

// The kernel at each block size against plain attention: output and the three gradients.
void expect_plain_attention(const Case& c, int64_t batch, int64_t heads, int64_t seq, int64_t dim,
                            const std::vector<int64_t>& blocks) {
  torch::manual_seed(7);
  const torch::Tensor q0 = torch::randn({batch, heads, seq, dim}),
                      k0 = torch::randn({batch, heads, seq, dim}),
                      v0 = torch::randn({batch, heads, seq, dim}),
                      grad = torch::randn({batch, heads, seq, dim});
  std::optional<MaskSpec> dropout;
  if (c.p > 0) {
    MaskSpec spec;
    spec.p = c.p;
    spec.seed = 11;
    spec.key = DropoutKey{true, 3, 5};
    spec.axis = 1;
    spec.parts = c.parts;
    spec.rank = c.rank;
    dropout = spec;
  }
  auto leaves = [&] {
    return std::vector<torch::Tensor>{q0.clone().requires_grad_(true),
                                      k0.clone().requires_grad_(true),
                                      v0.clone().requires_grad_(true)};
  };
  auto want = leaves();
  const torch::Tensor expected = plain_attention(want[0], want[1], want[2], c.mask, dropout);
  expected.backward(grad);
  for (int64_t block : blocks) {
    auto got = leaves();
    const torch::Tensor out =
        memory_efficient_attention(got[0], got[1], got[2], c.mask, dropout, block);
    out.backward(grad);
    const std::string what = std::string(c.name) + ", seq " + std::to_string(seq) + ", dim " +
                             std::to_string(dim) + ", block " + std::to_string(block);
    EXPECT_TRUE(torch::allclose(out, expected, 1e-5, 1e-6))
        << what << ": output differs by " << (out - expected).abs().max().item<float>();
    for (size_t t = 0; t < 3; ++t) {
      EXPECT_TRUE(torch::allclose(got[t].grad(), want[t].grad(), 1e-4, 1e-5))
          << what << ": gradient of "
          << "qkv"[t] << " differs by "
          << (got[t].grad() - want[t].grad()).abs().max().item<float>();
    }
  }
}

TEST_P(MemoryEfficientAttentionTest, OutputsAndGradientsAreThoseOfPlainAttention) {
  const std::vector<Case> cases = {
      {"causal", {true, 0, 1 / std::sqrt(8.0)}, 0},
      {"bidirectional", {false, 0, 1 / std::sqrt(8.0)}, 0},
      {"local window 4, unscaled", {true, 4, 1.0}, 0},
      {"causal with dropout", {true, 0, 1 / std::sqrt(8.0)}, 0.3},
      {"bidirectional with dropout", {false, 0, 0.5}, 0.3},
      {"local with dropout", {true, 5, 1.0}, 0.2},
      {"dropout on heads 3..5 of 6", {true, 0, 0.5}, 0.3, 2, 1},
  };
  for (const Case& c : cases) expect_plain_attention(c, 2, 3, 13, 8, {1, 4, 5, 13, 0});
}

// Sequences of several default blocks (64), rows whose visible keys start and end inside a
// block; heads of 32 and 64 (the kernel's own loops for them) and of 40 (no multiple of a vector).
TEST_P(MemoryEfficientAttentionTest, ManyBlocksOfWideHeads) {
  for (int64_t dim : {32, 40, 64}) {
    const double scale = 1 / std::sqrt(static_cast<double>(dim));
    const std::vector<Case> cases = {
        {"causal with dropout", {true, 0, scale}, 0.1},
        {"bidirectional", {false, 0, scale}, 0},
        {"local window 70 with dropout", {true, 70, scale}, 0.2},
    };
    for (const Case& c : cases) expect_plain_attention(c, 2, 2, 150, dim, {0, 48});
  }
}

TEST_P(MemoryEfficientAttentionTest, TheBlockMaskIsTheWholeTensorsMask) {
  MaskSpec spec;
  spec.p = 0.4;
  spec.seed = 5;
  spec.key = DropoutKey{true, 2, 7};
  spec.axis = 1;
  spec.parts = 2;
  spec.rank = 1;
  const torch::Tensor whole = keyed_mask(spec, torch::ones({3, 2, 9, 9}));
  // Rows 2..5, columns 5..7 of every head of every sample, drawn row by row.
  torch::Tensor block = torch::empty({3, 2, 4, 3});
  for (int64_t b = 0; b < 3; ++b) {
    for (int64_t h = 0; h < 2; ++h) {
      const AttentionMaskRows rows = attention_mask_rows(spec, 2, 9, b, h);
      for (int64_t i = 0; i < 4; ++i)
        attention_mask_row(rows, 2 + i, 5, 3, block[b][h][i].data_ptr<float>());
    }
  }
  EXPECT_TRUE(torch::equal(block, whole.narrow(2, 2, 4).narrow(3, 5, 3)));
  // The mask drops something and keeps something: the comparison above can fail.
  EXPECT_GT(whole.eq(0).sum().item<int64_t>(), 0);
  EXPECT_GT(whole.ne(0).sum().item<int64_t>(), 0);
}

INSTANTIATE_TEST_SUITE_P(EveryLevel, MemoryEfficientAttentionTest,
                         ::testing::Values(simd::Level::kBaseline, simd::Level::kAvx2,
                                           simd::Level::kAvx512),
                         [](const ::testing::TestParamInfo<simd::Level>& info) {
                           return std::string(simd::level_name(info.param));
                         });

TEST(MemoryEfficientAttention, RefusesWhatItCannotCompute) {
  const torch::Tensor q = torch::randn({1, 2, 4, 8});
  EXPECT_THROW(memory_efficient_attention(q, q, q.narrow(3, 0, 4), {}, std::nullopt),
               std::exception);
  EXPECT_THROW(memory_efficient_attention(q.to(torch::kDouble), q.to(torch::kDouble),
                                          q.to(torch::kDouble), {}, std::nullopt),
               std::exception);
}

}  // namespace
}  // namespace slapo::schedule
