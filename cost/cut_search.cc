#include "cost/cut_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace slapo::cost {

std::optional<CutSearch> best_cuts(const Predictor& predictor, const PredictInput& in,
                                   const space::StageSplits& splits, double budget_bytes,
                                   CutMethod method) {
  const int64_t p = splits.stages(), layers = splits.layers();
  SLAPO_CHECK(p == std::max<int64_t>(1, in.pp), ErrorCode::kInvalidArgument, "splits of ", p,
              " stages for pp = ", in.pp);
  predictor.check_layout(in);
  const int64_t lo = std::max<int64_t>(1, splits.min_len()), hi = splits.max_len();
  const int64_t lens = hi - lo + 1;
  if (lens <= 0 || splits.count() == 0) return std::nullopt;
  // Whether stage s can begin at block `begin`: the s stages before it cover blocks 0..begin − 1
  // and the p − s from it the rest, every one of lo to hi blocks.
  auto can_begin = [&](int64_t s, int64_t begin) {
    if (s == p) return begin == layers;
    return s * lo <= begin && begin <= s * hi && (p - s) * lo <= layers - begin &&
           layers - begin <= (p - s) * hi;
  };
  // Every stage a split can have — (stage, first block, length) of a stage that begins where a
  // split can begin it and ends where one can go on — with its time, tail, and whether it fits the
  // budget; by (stage, first block). Only those: their times and tails are the bounds tried, and
  // at two stages of 48 blocks they are 94, not the 4,512 of every (stage, block, length).
  struct Option {
    int64_t len = 0;
    double t = 0, tail = 0;
  };
  auto cell = [&](int64_t s, int64_t begin) {
    return static_cast<size_t>(s * (layers + 1) + begin);
  };
  std::vector<std::vector<Option>> options(static_cast<size_t>((p + 1) * (layers + 1)));
  std::vector<double> times, tails;
  for (int64_t s = 0; s < p; ++s) {
    for (int64_t begin = 0; begin < layers; ++begin) {
      if (!can_begin(s, begin)) continue;
      for (int64_t len = lo; len <= hi && begin + len <= layers; ++len) {
        if (!can_begin(s + 1, begin + len)) continue;
        const Predictor::StageCost c = predictor.stage_cost(in, s, begin, begin + len);
        if (budget_bytes > 0 && c.peak_bytes > budget_bytes) continue;
        options[cell(s, begin)].push_back({len, c.micro_batch_ms, c.tail});
        times.push_back(c.micro_batch_ms);
        tails.push_back(c.tail);
      }
    }
  }
  auto unique_sorted = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  unique_sorted(times);
  unique_sorted(tails);
  const double m = static_cast<double>(std::max<int64_t>(1, in.micro_batches));
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // best[s][begin]: the least Σ t of stages s.. covering blocks begin..layers − 1; among equal
  // sums (stages of equal cost make many), the least Σ t² — the most even split.
  std::vector<double> best(static_cast<size_t>((p + 1) * (layers + 1)), kNone);
  std::vector<double> squares(best.size(), 0);
  std::vector<int64_t> choice(best.size(), 0);
  double best_value = kNone;
  IntList best_cuts_found;
  uint64_t tried = 0;
  const auto found = [&](bool enumerated) -> std::optional<CutSearch> {
    if (best_value == kNone) return std::nullopt;
    PredictInput chosen = in;
    chosen.cuts = best_cuts_found;
    return CutSearch{best_cuts_found, predictor.predict(chosen), tried, enumerated};
  };
  const bool each_split = method == CutMethod::kEachSplit ||
                          (method == CutMethod::kCheapest &&
                           splits.count() <= static_cast<uint64_t>(times.size()) * tails.size());
  if (each_split) {
    // Σ t + (m − 1)·max t + max tail of each split, from its stages' options.
    double best_squares = kNone;
    splits.for_each([&](const IntList& cuts) {
      double sum = 0, sum2 = 0, slowest = 0, tail = 0;
      int64_t begin = 0;
      for (int64_t s = 0; s < p; ++s) {
        const int64_t end = s + 1 < p ? cuts[static_cast<size_t>(s)] : layers;
        const std::vector<Option>& here = options[cell(s, begin)];
        const auto o = std::find_if(here.begin(), here.end(),
                                    [&](const Option& x) { return x.len == end - begin; });
        if (o == here.end()) return true;  // a stage over the budget
        sum += o->t;
        sum2 += o->t * o->t;
        slowest = std::max(slowest, o->t);
        tail = std::max(tail, o->tail);
        begin = end;
      }
      const double value = sum + (m - 1) * slowest + tail;
      const double tolerance = 1e-12 * std::max(1.0, std::abs(value));
      if (value < best_value - tolerance ||
          (value <= best_value + tolerance && sum2 < best_squares)) {
        best_value = value;
        best_squares = sum2;
        best_cuts_found = cuts;
      }
      ++tried;
      return true;
    });
    return found(true);
  }
  for (double bound_t : times) {
    // Σ t ≥ bound_t, so no later bound can beat the best found.
    if (bound_t * m >= best_value) break;
    for (double bound_tail : tails) {
      if (bound_t * m + bound_tail >= best_value) break;
      ++tried;
      std::fill(best.begin(), best.end(), kNone);
      best[cell(p, layers)] = 0;
      squares[cell(p, layers)] = 0;
      for (int64_t s = p - 1; s >= 0; --s) {
        for (int64_t begin = 0; begin < layers; ++begin) {
          double v = kNone, v2 = kNone;
          int64_t pick = 0;
          for (const Option& o : options[cell(s, begin)]) {
            if (o.t > bound_t || o.tail > bound_tail) continue;
            const size_t next = cell(s + 1, begin + o.len);
            if (best[next] == kNone) continue;
            const double sum = best[next] + o.t, sum2 = squares[next] + o.t * o.t;
            const double tolerance = 1e-12 * std::max(1.0, std::abs(sum));
            if (sum < v - tolerance || (sum <= v + tolerance && sum2 < v2)) {
              v = sum;
              v2 = sum2;
              pick = o.len;
            }
          }
          best[cell(s, begin)] = v;
          squares[cell(s, begin)] = v2;
          choice[cell(s, begin)] = pick;
        }
      }
      const double sum = best[cell(0, 0)];
      if (sum == kNone) continue;
      const double value = sum + (m - 1) * bound_t + bound_tail;
      if (value < best_value) {
        best_value = value;
        best_cuts_found.clear();
        int64_t begin = 0;
        for (int64_t s = 0; s + 1 < p; ++s) {
          begin += choice[cell(s, begin)];
          best_cuts_found.push_back(begin);
        }
      }
    }
  }
  return found(false);
}

}  // namespace slapo::cost
