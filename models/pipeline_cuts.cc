#include "models/pipeline_cuts.h"

#include <limits>
#include <tuple>

#include "core/error.h"

namespace slapo::models {

std::vector<int64_t> balanced_cuts(const ModelSpec& spec, int64_t stages) {
  const int64_t n = spec.layers;
  SLAPO_CHECK(stages >= 1 && stages <= n, ErrorCode::kInvalidArgument, stages,
              " pipeline stages for ", n, " blocks");
  // In units of one block, so the sums are exact for whole blocks.
  const double head =
      spec.head_forward_flops(spec.max_seq) / spec.block_forward_flops(spec.max_seq);
  auto stage_cost = [&](int64_t begin, int64_t end) {  // blocks [begin, end)
    return static_cast<double>(end - begin) + (end == n ? head : 0.0);
  };
  // best[s][i]: the best split of blocks [0, i) into s stages: (largest cost, sum of squares,
  // cuts), compared in that order.
  using Split = std::tuple<double, double, std::vector<int64_t>>;
  const Split none{std::numeric_limits<double>::infinity(), 0.0, {}};
  std::vector<std::vector<Split>> best(static_cast<size_t>(stages) + 1,
                                       std::vector<Split>(static_cast<size_t>(n) + 1, none));
  best[0][0] = Split{0.0, 0.0, {}};
  for (int64_t s = 1; s <= stages; ++s) {
    for (int64_t i = s; i <= n; ++i) {
      for (int64_t j = s - 1; j < i; ++j) {  // the last stage is blocks [j, i)
        const Split& before = best[static_cast<size_t>(s - 1)][static_cast<size_t>(j)];
        if (std::get<0>(before) == std::numeric_limits<double>::infinity()) continue;
        const double c = stage_cost(j, i);
        std::vector<int64_t> cuts = std::get<2>(before);
        if (j > 0) cuts.push_back(j);
        Split candidate{std::max(std::get<0>(before), c), std::get<1>(before) + c * c,
                        std::move(cuts)};
        Split& slot = best[static_cast<size_t>(s)][static_cast<size_t>(i)];
        if (candidate < slot) slot = std::move(candidate);
      }
    }
  }
  return std::get<2>(best[static_cast<size_t>(stages)][static_cast<size_t>(n)]);
}

}  // namespace slapo::models
