#include "cost/head_difference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "cost/fit.h"
#include "cost/predictor.h"

namespace slapo::cost {

namespace {

// y at x on the line through the points (ascending x): constant with one point.
double along(const std::vector<std::pair<double, double>>& points, double x) {
  return points.size() == 1 ? points.front().second : polyline_at(points, x);
}

// The collectives of `differences` (by batch) at `x` samples, each count along the batch.
CollectiveTally collectives_along(const std::map<int64_t, const HeadDifference*>& differences,
                                  double x) {
  std::vector<std::pair<double, double>> lines[4];
  for (const auto& [batch, d] : differences) {
    const CollectiveTally& c = d->collectives;
    const double b = static_cast<double>(batch);
    lines[0].emplace_back(b, c.all_reduce_calls);
    lines[1].emplace_back(b, c.all_reduce_bytes);
    lines[2].emplace_back(b, c.all_gather_calls);
    lines[3].emplace_back(b, c.all_gather_bytes);
  }
  return {along(lines[0], x), along(lines[1], x), along(lines[2], x), along(lines[3], x)};
}

}  // namespace

OutsideParams outside_params_more(const ModelShape& to, const ModelShape& from) {
  return {to.prologue_params - from.prologue_params,
          to.epilogue_params - from.epilogue_params,
          to.tied_params - from.tied_params,
          to.largest_prologue_tensor,
          to.largest_epilogue_tensor,
          to.loss_chunk_samples};
}

double paired_head_ms(const std::vector<double>& rounds) {
  if (rounds.empty()) return 0;
  const bool all_less = std::all_of(rounds.begin(), rounds.end(), [](double d) { return d < 0; });
  const bool all_more = std::all_of(rounds.begin(), rounds.end(), [](double d) { return d > 0; });
  if (!all_less && !all_more) return 0;
  return *std::min_element(rounds.begin(), rounds.end(),
                           [](double a, double b) { return std::abs(a) < std::abs(b); });
}

Profile shift_head(const Profile& profile, const std::vector<HeadDifference>& differences,
                   const OutsideParams& more) {
  std::map<int64_t, const HeadDifference*> one;                          // by batch
  std::map<std::pair<int64_t, int64_t>, const HeadDifference*> deeper;   // by (layers, batch)
  std::map<std::pair<int64_t, int64_t>, const HeadDifference*> several;  // by (micro, batch)
  std::map<std::tuple<int64_t, int64_t, int64_t>, const HeadDifference*>
      checkpointed;  // by (layers, checkpointed blocks, batch)
  for (const HeadDifference& d : differences) {
    if (d.ckpt_blocks > 0)
      checkpointed[{d.layers, d.ckpt_blocks, d.batch}] = &d;
    else if (d.micro_batches != 1)
      several[{d.micro_batches, d.batch}] = &d;
    else if (d.layers == 1)
      one[d.batch] = &d;
    else
      deeper[{d.layers, d.batch}] = &d;
  }
  SLAPO_CHECK(!one.empty(), ErrorCode::kInvalidArgument,
              "shifting a profile by its head's difference: none measured on one block in one "
              "micro-batch");
  // The lines of a depth: the one-block differences, and that depth's own where measured.
  std::map<int64_t, std::pair<std::vector<std::pair<double, double>>,
                              std::vector<std::pair<double, double>>>>
      lines;  // by layers: (ms, peak) along the batch
  auto line_of = [&](int64_t layers) -> const auto& {
    auto it = lines.find(layers);
    if (it != lines.end()) return it->second;
    // The bytes: the depth's own differences where measured, else the deepest's — a one-block
    // step can still peak in its optimizer step (the same bytes whatever the head) at batches where
    // the deep ones peak in their activations — else the one-block ones.
    std::map<int64_t, const HeadDifference*> at = one;
    int64_t deepest = 0;
    for (const auto& [key, d] : deeper) deepest = std::max(deepest, key.first);
    for (const auto& [key, d] : deeper) {
      if (key.first == deepest && key.first != layers) at[key.second] = d;
    }
    std::vector<std::pair<double, double>> own_ms;  // the depth's own time differences
    for (const auto& [key, d] : deeper) {
      if (key.first != layers) continue;
      at[key.second] = d;
      if (std::isfinite(d->ms)) own_ms.emplace_back(static_cast<double>(d->batch), d->ms);
    }
    auto& [ms, peak] = lines[layers];
    for (const auto& [batch, d] : at) peak.emplace_back(static_cast<double>(batch), d->peak_bytes);
    for (const auto& [batch, d] : one) ms.emplace_back(static_cast<double>(batch), d->ms);
    // The time a head saves or costs grows with the depth before it on this machine (gpt-mini's
    // fused head: 0.05 ms a sample on one block, 0.3–1.8 on six — the logits' memory traffic
    // beside more live activations; docs/cost-model.md): a depth with time differences of its
    // own takes its time from them alone, from what the head differs by at no sample — its
    // parameters' optimizer step — to the first (measured at the largest batches, they are not
    // extrapolated down along their steepest segment).
    if (!own_ms.empty() && own_ms.front().first > 0)
      own_ms.insert(own_ms.begin(), {0.0, profile.optimizer_ms_per_param * more.total()});
    if (!own_ms.empty()) ms = own_ms;
    return lines[layers];
  };
  // Where the base's step with every block checkpointed peaked at its top block's recompute,
  // above its loss's moment (Predictor::Fit::recompute_read_at), the head is gone by then: that
  // step keeps its peak unless the new head's moment rises above it. Shifted as the loss's moment,
  // gpt-tiny's fused head (sequence 16) put it 29% under its trials.
  const std::optional<Predictor::Fit> base_fit = [&]() -> std::optional<Predictor::Fit> {
    if (!profile.block_bytes.checkpointed_measured) return std::nullopt;
    try {
      return Predictor(profile).fit();
    } catch (const Error&) {
      return std::nullopt;  // a profile the predictor cannot fit: shifted as the loss's moment
    }
  }();
  Profile out = profile;
  out.shape.prologue_params += more.prologue;
  out.shape.epilogue_params += more.epilogue;
  out.shape.tied_params += more.tied;
  if (more.largest_prologue_tensor > 0)
    out.shape.largest_prologue_tensor = more.largest_prologue_tensor;
  if (more.largest_epilogue_tensor > 0)
    out.shape.largest_epilogue_tensor = more.largest_epilogue_tensor;
  if (more.loss_chunk_samples >= 0) out.shape.loss_chunk_samples = more.loss_chunk_samples;
  for (ProfilePoint& q : out.points) {
    if (q.micro_batches == 1) {
      const auto& [ms, peak] = line_of(q.layers);
      q.step_ms += along(ms, static_cast<double>(q.batch));
      auto own = checkpointed.find({q.layers, q.ckpt_blocks, q.batch});
      if (own != checkpointed.end()) {
        q.peak_bytes += own->second->peak_bytes;
      } else if (q.ckpt_blocks == q.layers && base_fit && base_fit->recompute_read_at == q.batch) {
        q.peak_bytes = std::max(q.peak_bytes, base_fit->recompute_read_loss_bytes +
                                                  along(peak, static_cast<double>(q.batch)));
      } else {
        q.peak_bytes += along(peak, static_cast<double>(q.batch));
      }
      q.collectives = q.collectives + collectives_along(one, static_cast<double>(q.batch));
    } else {
      auto it = several.find({q.micro_batches, q.batch});
      SLAPO_CHECK(it != several.end(), ErrorCode::kInvalidArgument,
                  "shifting a profile by its head's difference: none measured at ", q.batch,
                  " samples in ", q.micro_batches, " micro-batches");
      q.step_ms += it->second->ms;
      q.peak_bytes += it->second->peak_bytes;
      q.collectives = q.collectives + it->second->collectives;
    }
    // A step takes at least its optimizer step: a head's difference larger than a tiny model's
    // step is the machine's noise (gpt-tiny's 2-block steps shifted to −4 to −6 ms on a loaded
    // machine), which a step of no time would pass on to every prediction as 0.0 ms.
    q.step_ms = std::max(q.step_ms, out.optimizer_ms(static_cast<double>(q.layers)));
    q.derived = true;
  }
  return out;
}

std::vector<HeadDifference> head_differences(const Profile& from, const Profile& to) {
  std::map<std::tuple<int64_t, int64_t>, const ProfilePoint*> of_to;  // (micro, batch)
  for (const ProfilePoint& q : to.points) {
    if (q.layers == 1 && q.ckpt_blocks == 0) of_to[{q.micro_batches, q.batch}] = &q;
  }
  std::vector<HeadDifference> out;
  bool one = false;
  for (const ProfilePoint& q : from.points) {
    if (q.layers != 1 || q.ckpt_blocks != 0) continue;
    auto it = of_to.find({q.micro_batches, q.batch});
    if (it == of_to.end()) continue;
    out.push_back({q.batch, 1, q.micro_batches, it->second->step_ms - q.step_ms,
                   it->second->peak_bytes - q.peak_bytes, it->second->collectives - q.collectives});
    one = one || q.micro_batches == 1;
  }
  SLAPO_CHECK(one, ErrorCode::kInvalidArgument,
              "the head's difference of two profiles: they share no one-block step of one "
              "micro-batch");
  // The deep steps: against `from`'s measured at the same batch, else its prediction there.
  std::map<int64_t, const ProfilePoint*> from_deep;
  for (const ProfilePoint& q : from.points) {
    if (q.layers == from.layers && q.ckpt_blocks == 0 && q.micro_batches == 1 && !q.derived)
      from_deep[q.batch] = &q;
  }
  // One rank of a tensor-parallel group predicted as if alone: its steps' compute and memory, what
  // the points measured (a simulated rank's step holds no collective's time); its collectives are
  // differenced as counted.
  Profile alone = from;
  alone.tp = 1;
  const Predictor predictor(alone);
  for (const ProfilePoint& q : to.points) {
    if (q.layers != from.layers || q.layers == 1 || q.ckpt_blocks != 0 || q.micro_batches != 1 ||
        q.derived)
      continue;
    PredictInput in;
    in.batch = q.batch;
    const Prediction at = predictor.predict(in);
    auto measured = from_deep.find(q.batch);
    if (measured != from_deep.end()) {
      // The time against `from`'s step as the line through its steps reads it (the predictor's:
      // one slow step of the base is not what the head saves), the bytes against the measured.
      out.push_back({q.batch, q.layers, 1, q.step_ms - at.step_ms,
                     q.peak_bytes - measured->second->peak_bytes,
                     q.collectives - measured->second->collectives});
      continue;
    }
    // Against a prediction: the peak (memory is fitted exactly, linear in the batch), not the time
    // (a step measured at another batch and moment than any of `from`'s: its difference from an
    // extrapolation was 0.3–1.8 ms a sample on table 5, not a head's).
    out.push_back({q.batch, q.layers, 1, std::nan(""), q.peak_bytes - at.peak_bytes, {}});
  }
  // The checkpointed deep steps: their peaks against `from`'s at the same point.
  std::map<std::tuple<int64_t, int64_t, int64_t>, const ProfilePoint*> from_checkpointed;
  for (const ProfilePoint& q : from.points) {
    if (q.layers > 1 && q.ckpt_blocks > 0 && q.micro_batches == 1)
      from_checkpointed[{q.layers, q.ckpt_blocks, q.batch}] = &q;
  }
  for (const ProfilePoint& q : to.points) {
    if (q.layers == 1 || q.ckpt_blocks == 0 || q.micro_batches != 1) continue;
    auto it = from_checkpointed.find({q.layers, q.ckpt_blocks, q.batch});
    if (it == from_checkpointed.end()) continue;
    HeadDifference d{q.batch, q.layers, 1, std::nan(""), q.peak_bytes - it->second->peak_bytes, {}};
    d.ckpt_blocks = q.ckpt_blocks;
    out.push_back(d);
  }
  return out;
}

}  // namespace slapo::cost
