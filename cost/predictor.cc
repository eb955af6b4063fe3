#include "cost/predictor.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/stats.h"
#include "cost/fit.h"

namespace slapo::cost {

namespace {

// schedule::kDefaultBucketBytes (schedule/runtime/data_parallel.h): gradients travel in flat
// all-reduces of at most this many bytes. Not included: that header needs LibTorch.
constexpr double kGradientBucketBytes = 25 << 20;
constexpr double kFloatBytes = 4;
// A step with every block checkpointed that peaks above the loss's moment by more than this share
// peaked at its top block's recompute (the bytes are exact: a share of a thousandth is no noise).
constexpr double kRecomputeAboveLoss = 1e-3;

// The points of one variant without checkpointing.
std::vector<const ProfilePoint*> plain_points(const Profile& p, int64_t layers) {
  std::vector<const ProfilePoint*> out;
  for (const ProfilePoint& q : p.points) {
    if (q.layers == layers && q.ckpt_blocks == 0 && q.micro_batches == 1) out.push_back(&q);
  }
  return out;
}

// Per batch, the median step time minus the optimizer step: the polyline of forward and backward.
std::vector<std::pair<double, double>> forward_backward_ms(
    const std::vector<const ProfilePoint*>& points, double optimizer_ms) {
  std::map<int64_t, std::vector<double>> by_batch;
  for (const ProfilePoint* q : points) by_batch[q->batch].push_back(q->step_ms);
  std::vector<std::pair<double, double>> out;
  for (const auto& [batch, ms] : by_batch)
    out.emplace_back(static_cast<double>(batch), std::max(0.0, median(ms) - optimizer_ms));
  // Above one sample a step grows linearly with the batch (the recorded tables' passes: within
  // 2% of a line from 4 to 80 samples), but a profile's points are single timed steps, each off by
  // 1–6% (table 4's six draws: the 11-sample step 1–6% below the line through the others): with
  // four of them or more, they are read off Siegel's repeated-median line through every point,
  // one sample's included (it holds the line's intercept where the batches above it leave it
  // loose: through those alone, one of table 4's draws had its smallest batch fastest per sample,
  // where the passes have it slowest). One wild step does not move it; a least-squares line spreads
  // it over the others (a 6% hiccup at 11 samples became 6% at 4). The one-sample point stays as
  // measured.
  std::vector<double> xs, ys;
  for (const auto& [x, y] : out) {
    xs.push_back(x);
    ys.push_back(y);
  }
  if (std::count_if(xs.begin(), xs.end(), [](double x) { return x >= 2; }) >= 4) {
    const Line line = repeated_median_line(xs, ys);
    for (auto& [x, y] : out) {
      if (x >= 2) y = std::max(0.0, line.at(x));
    }
  }
  return out;
}

// The tensor-parallel collectives of one micro-batch of a variant: calls (the median) and bytes
// (affine in the batch).
Predictor::CommLine comm_line(const std::vector<const ProfilePoint*>& points, bool all_reduce) {
  std::vector<double> calls;
  std::vector<std::pair<double, double>> bytes;
  for (const ProfilePoint* q : points) {
    calls.push_back(all_reduce ? q->collectives.all_reduce_calls : q->collectives.all_gather_calls);
    bytes.emplace_back(static_cast<double>(q->batch), all_reduce ? q->collectives.all_reduce_bytes
                                                                 : q->collectives.all_gather_bytes);
  }
  const auto [at0, per_sample] = fit_line(bytes);
  return {median(calls), at0, per_sample};
}

Predictor::CommLine per_block(const Predictor::CommLine& deep, const Predictor::CommLine& shallow,
                              double blocks_between) {
  return {(deep.calls - shallow.calls) / blocks_between,
          (deep.bytes_at0 - shallow.bytes_at0) / blocks_between,
          (deep.bytes_per_sample - shallow.bytes_per_sample) / blocks_between};
}

Predictor::CommLine minus(const Predictor::CommLine& a, const Predictor::CommLine& b) {
  return {a.calls - b.calls, a.bytes_at0 - b.bytes_at0, a.bytes_per_sample - b.bytes_per_sample};
}

// The largest one-sample peak of `points`; 0 without one.
double one_sample_peak(const std::vector<const ProfilePoint*>& points) {
  double peak = 0;
  for (const ProfilePoint* q : points) {
    if (q->batch == 1) peak = std::max(peak, q->peak_bytes);
  }
  return peak;
}

// Per batch above one sample, the median peak of `points` (one variant without checkpointing) —
// where it lies above the variant's one-sample peak, if `above_the_floor`.
std::map<double, double> activation_peaks(const std::vector<const ProfilePoint*>& points,
                                          bool above_the_floor) {
  const double floor = one_sample_peak(points);
  std::map<double, std::vector<double>> by_batch;
  for (const ProfilePoint* q : points) {
    if (q->batch > 1) by_batch[static_cast<double>(q->batch)].push_back(q->peak_bytes);
  }
  std::map<double, double> out;
  for (const auto& [x, peaks] : by_batch) {
    const double peak = median(peaks);
    if (!above_the_floor || peak > floor * (1 + kAtTheOneSamplePeak)) out[x] = peak;
  }
  return out;
}

// A block's state — and what its forward keeps whatever the batch — from the one-block and deep
// variants' peaks, given what the block keeps a sample measured alone: where both variants peak in
// their activations, their difference a block less what it keeps there (exact); where the
// one-block variant's one-sample peak is its optimizer step's — its peaks grow by less than a
// block keeps a sample —, the one-sample peaks' difference a block (both the optimizer step's:
// the state; more where the deep variant's is its activations': never under). Each difference is
// at most the state otherwise: the largest. -1: nothing to read it from.
double block_state_alone(const std::vector<const ProfilePoint*>& shallow,
                         const std::vector<const ProfilePoint*>& deep_plain, double d,
                         const BlockBytes& alone) {
  if (!alone.measured) return -1;
  const std::map<double, double> one = activation_peaks(shallow, false);
  const std::map<double, double> deep = activation_peaks(deep_plain, false);
  const double one_1 = one_sample_peak(shallow), deep_1 = one_sample_peak(deep_plain);
  const double kept = alone.kept_per_sample;
  if (one_1 > 0 && deep_1 > 0 && !one.empty()) {
    const auto& [x, peak] = *one.begin();
    if ((peak - one_1) / (x - 1) < kept) return (deep_1 - one_1) / (d - 1) + alone.kept_at0;
  }
  double state = -1;
  if (one_1 > 0 && deep_1 > 0) state = (deep_1 - one_1) / (d - 1) - kept;
  for (const auto& [x, peak] : one) {
    auto at = deep.find(x);
    if (at != deep.end()) state = std::max(state, (at->second - peak) / (d - 1) - kept * x);
  }
  return state;
}

// Samples a rank runs per micro-batch: what the profile's batches are of.
double samples_per_micro_batch(const PredictInput& in) {
  return static_cast<double>(in.batch) /
         static_cast<double>(std::max<int64_t>(1, in.dp) * std::max<int64_t>(1, in.micro_batches));
}

}  // namespace

const char* to_string(PeakMoment moment) {
  switch (moment) {
    case PeakMoment::kLossBackward: return "the loss's backward";
    case PeakMoment::kTopBlockBackward: return "its top block's backward";
    case PeakMoment::kRecompute: return "a checkpointed block's recompute";
    case PeakMoment::kOptimizerStep: return "the optimizer step";
    case PeakMoment::kLeastProfiled:
      return "the model's least (profiled: one sample, every block checkpointed)";
    case PeakMoment::kGradientAveraging: return "the gradients' averaging (a bucket packed)";
  }
  return "";
}

std::string Prediction::to_json() const {
  nlohmann::ordered_json j;
  j["step_ms"] = step_ms;
  j["peak_bytes"] = peak_bytes;
  j["peak_at"] = to_string(peak_at);
  j["samples_per_s"] = samples_per_s;
  if (tokens_per_s > 0) j["tokens_per_s"] = tokens_per_s;
  if (tflops > 0) j["tflops"] = tflops;
  nlohmann::ordered_json t = nlohmann::ordered_json::object(), m = nlohmann::ordered_json::object();
  for (const auto& [name, v] : time_ms) t[name] = v;
  for (const auto& [name, v] : memory_bytes) m[name] = v;
  j["time_ms"] = t;
  j["memory_bytes"] = m;
  nlohmann::ordered_json s = nlohmann::ordered_json::array();
  for (const StagePrediction& stage : stages) {
    s.push_back({{"blocks", stage.blocks},
                 {"micro_batch_ms", stage.micro_batch_ms},
                 {"peak_bytes", stage.peak_bytes},
                 {"peak_at", to_string(stage.peak_at)}});
  }
  j["stages"] = s;
  j["notes"] = notes;
  return j.dump();
}

Predictor::Predictor(Profile profile, std::optional<CollectiveModel> collectives)
    : profile_(std::move(profile)), collectives_(std::move(collectives)) {
  SLAPO_CHECK(profile_.layers >= 1, ErrorCode::kInvalidArgument, "profile: no blocks");
  // A step of no time is no measurement (a derived key's steps composed below zero once came out
  // as a 0.0 ms prediction): said, never predicted from.
  for (const ProfilePoint& q : profile_.points) {
    SLAPO_CHECK(q.step_ms > 0, ErrorCode::kInvalidArgument, "profile: the step of ", q.layers,
                " block(s) at a batch of ", q.batch, " takes ", q.step_ms,
                " ms: not a time (profile again: --reprofile)");
  }
  int64_t deep = 0;
  for (const ProfilePoint& q : profile_.points) deep = std::max(deep, q.layers);
  fit_.deep_layers = deep;
  const std::vector<const ProfilePoint*> shallow = plain_points(profile_, 1);
  const std::vector<const ProfilePoint*> deep_plain = plain_points(profile_, deep);
  auto batches = [](const std::vector<const ProfilePoint*>& points) {
    std::map<int64_t, int> b;
    for (const ProfilePoint* q : points) ++b[q->batch];
    return b.size();
  };
  SLAPO_CHECK(deep >= 2 && batches(shallow) >= 2 && batches(deep_plain) >= 2,
              ErrorCode::kInvalidArgument,
              "profile: needs steps at two batch sizes without checkpointing, of a variant of one "
              "block and of one of two or more blocks");
  const double d = static_cast<double>(deep);
  fit_.shallow_ms = forward_backward_ms(shallow, profile_.optimizer_ms(1));
  const double optimizer_d = profile_.optimizer_ms(d);
  fit_.deep_ms = forward_backward_ms(deep_plain, optimizer_d);

  // Memory, in the peaks of the steps without checkpointing above one sample and above their
  // variant's one-sample peak: at or under it, the optimizer step's own need, not the activations,
  // is the peak (the least ratio below covers those).
  std::map<double, double> one_block = activation_peaks(shallow, true);
  std::map<double, double> deep_peaks = activation_peaks(deep_plain, true);
  // The blocks, affine in the batch: the difference of the depths at the batches both measured,
  // where whatever the rest holds cancels — a head whose buffer stops growing past a batch (the
  // fused LM loss's chunk of logits) bends both variants' peaks alike.
  auto block_differences = [&] {
    std::vector<std::pair<double, double>> out;
    for (const auto& [x, peak] : one_block) {
      auto deep_peak = deep_peaks.find(x);
      if (deep_peak != deep_peaks.end()) out.emplace_back(x, (deep_peak->second - peak) / (d - 1));
    }
    return out;
  };
  std::vector<std::pair<double, double>> blocks = block_differences();
  const double one_sample_state =
      (one_sample_peak(deep_plain) - one_sample_peak(shallow)) / (d - 1);
  const BlockBytes& alone = profile_.block_bytes;
  const double alone_state = block_state_alone(shallow, deep_plain, d, alone);
  if (alone_state >= 0) {
    // A block measured alone keeps what the variants' difference reads — to the byte on
    // bert-mini's plain head (1,180,672 bytes a sample) — and tells where the one-block variant's
    // peak is its optimizer step's at every batch: bert-mini's fused head peaked within 0.4% of
    // its one-sample peak up to 8 samples, the difference along those read a block as 1.69 MB a
    // sample and 7.4 MB of state (12.6), and a pipeline's first stage took the rest in its share —
    // 23% over its trials. The one-block peaks are then not read: the rest is the deep variant's
    // less its blocks.
    fit_.block_state = alone_state;
    fit_.block_act = alone.kept_per_sample;
    one_block.clear();
    if (deep_peaks.size() < 2) deep_peaks = activation_peaks(deep_plain, false);
  } else if (blocks.size() >= 2) {
    std::tie(fit_.block_state, fit_.block_act) = fit_line(blocks);
  } else if (blocks.size() == 1 && one_sample_state > 0) {
    // One batch where both are the activations' (a one-block variant whose optimizer step is its
    // peak at the smallest batch): a block's state is what it adds to the one-sample peak, where
    // both variants peak in the optimizer step — the state, and its need of one tensor at a time.
    fit_.block_state = one_sample_state;
    fit_.block_act = (blocks[0].second - one_sample_state) / blocks[0].first;
  } else {
    // A profile of fewer batches: the peaks at the floor too.
    one_block = activation_peaks(shallow, false);
    deep_peaks = activation_peaks(deep_plain, false);
    blocks = block_differences();
    SLAPO_CHECK(blocks.size() >= 2, ErrorCode::kInvalidArgument,
                "profile: needs steps without checkpointing of both variants at two batch sizes "
                "above one sample");
    std::tie(fit_.block_state, fit_.block_act) = fit_line(blocks);
  }
  // The rest: what each peak holds besides its blocks, in a line through the two largest batches
  // measured — where a budget's edge lies; a bent head's peaks at fewer samples lie under it.
  std::map<double, std::vector<double>> rest;
  auto blocks_at = [&](double count, double x) {
    return count * (fit_.block_state + fit_.block_act * x);
  };
  for (const auto& [x, peak] : one_block) rest[x].push_back(peak - blocks_at(1, x));
  for (const auto& [x, peak] : deep_peaks) rest[x].push_back(peak - blocks_at(d, x));
  SLAPO_CHECK(rest.size() >= 2, ErrorCode::kInvalidArgument,
              "profile: needs steps without checkpointing at two batch sizes above one sample");
  auto largest = rest.rbegin();
  const std::pair<double, double> far = {largest->first, median(largest->second)};
  ++largest;
  const std::pair<double, double> near = {largest->first, median(largest->second)};
  std::tie(fit_.outside_state, fit_.outside_act) = fit_line({near, far});
  const double state_1 = fit_.block_state + fit_.outside_state;
  const double act_1 = fit_.block_act + fit_.outside_act;
  const double state_d = d * fit_.block_state + fit_.outside_state;
  const double act_d = d * fit_.block_act + fit_.outside_act;
  // Where the deep variant's peaks bend off that line (between the largest batches and the
  // smaller ones), the prediction of one stage follows them (stage_cost).
  for (const auto& [x, peak] : deep_peaks)
    fit_.deep_bend.emplace_back(x, peak - (state_d + act_d * x));
  // A loss that computes its logits a chunk at a time bends them once: the chunk fills at
  // ModelShape::loss_chunk_samples, and past it the peaks grow by less. Where that lies between the
  // two largest batches, the line through them passes under the curve between them (gpt-tiny with
  // a vocabulary of 16,384, a chunk of 16 samples, measured at 12 and 64: 6.4% under its trial at
  // 40). The curve there: the segment before the two continued up to the chunk, then on to the
  // largest peak — no higher than the line through that at the least slope a deep peak grows by
  // (its blocks' activations and tokens).
  const double chunk = profile_.shape.loss_chunk_samples;
  if (chunk > 0 && deep_peaks.size() >= 3) {
    auto it = deep_peaks.rbegin();
    const auto [x2, y2] = *it++;
    const auto [x1, y1] = *it++;
    const auto [x0, y0] = *it;
    if (chunk > x1 && chunk < x2) {
      const double least = d * fit_.block_act + profile_.shape.profiled_input_bytes_per_sample;
      const double filled =
          std::min(y1 + (y1 - y0) / (x1 - x0) * (chunk - x1), y2 - least * (x2 - chunk));
      const double bend = filled - (state_d + act_d * chunk);
      if (bend > 0) fit_.deep_bend.insert(std::prev(fit_.deep_bend.end()), {chunk, bend});
    }
  }
  // Under the line, the peaks bend up to it where the chunk fills: a batch between one under it
  // and one on it follows the line from the chunk on where the profile says where that is (from
  // the batch on it, where the chunk fills there), and from the batch under it on where it does
  // not say (the conservative side: interpolated between a recorded profile's 8 and 18 samples,
  // table 5's chunk at 16 was 1.2% under).
  for (size_t i = 0; i + 1 < fit_.deep_bend.size(); ++i) {
    const auto [xa, a] = fit_.deep_bend[i];
    const auto [xb, b] = fit_.deep_bend[i + 1];
    if (a > -1 || b < -1) continue;  // (within a byte of the line: on it)
    if (chunk >= xb) continue;       // filled at the batch on it: the curve is straight up to there
    // (Not said: a step — the polyline rises to the line within a millionth of the way.)
    const double meets = chunk > xa ? chunk : xa + 1e-6 * (xb - xa);
    fit_.deep_bend.insert(fit_.deep_bend.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                          {meets, 0.0});
    ++i;
  }
  // The profile's steps held their tokens, x samples' of them, beside the model: a prediction
  // counts a step's whole batch's apart (stage_cost).
  const double tokens = profile_.shape.profiled_input_bytes_per_sample;
  fit_.loss_act = std::max(0.0, fit_.outside_act - tokens);
  // Two GPipe micro-batches of x samples keep twice what one keeps until backward: the difference
  // from one micro-batch of x is x · (a block's activations + what the loss keeps + the other
  // micro-batch's tokens).
  fit_.outside_kept = fit_.loss_act;
  for (const ProfilePoint& q : profile_.points) {
    if (q.layers != 1 || q.ckpt_blocks != 0 || q.micro_batches != 2) continue;
    const double x = static_cast<double>(q.batch) / 2;
    const double one = state_1 + act_1 * x;
    fit_.outside_kept =
        std::clamp((q.peak_bytes - one) / x - fit_.block_act - tokens, 0.0, fit_.loss_act);
  }

  fit_.block_all_reduce = per_block(comm_line(deep_plain, true), comm_line(shallow, true), d - 1);
  fit_.outside_all_reduce = minus(comm_line(shallow, true), fit_.block_all_reduce);
  fit_.block_all_gather = per_block(comm_line(deep_plain, false), comm_line(shallow, false), d - 1);
  fit_.outside_all_gather = minus(comm_line(shallow, false), fit_.block_all_gather);

  // Checkpointed points of the deep variant: the recompute share (least squares through the origin
  // over k · B(x), at batches also profiled without checkpointing), what a checkpointed block keeps
  // (at the largest batch with every block checkpointed), the least peak.
  std::map<int64_t, const ProfilePoint*> plain_at;
  for (const ProfilePoint* q : deep_plain) plain_at[q->batch] = q;
  double share_num = 0, share_den = 0;
  const ProfilePoint* all_checkpointed = nullptr;
  double least_peak = -1;
  for (const ProfilePoint& q : profile_.points) {
    if (q.layers != deep || q.micro_batches != 1) continue;
    const double x = static_cast<double>(q.batch);
    // The peak with the least activations (1 sample, every block checkpointed; a profile measured
    // before 2026-11-28 has it without checkpointing): what the whole model needs at the least —
    // the optimizer step, or a moment of the backward — as a multiple of the parameters' state.
    // (Not as the least peak above the fitted state: that holds the fused loss's chunk of logits
    // too, above every peak of a small batch, and a sentinel of -1 took the last of those.)
    if (least_peak < 0 || q.peak_bytes < least_peak) least_peak = q.peak_bytes;
    if (q.ckpt_blocks <= 0) continue;
    auto plain = plain_at.find(q.batch);
    if (plain != plain_at.end()) {
      // Against the plain step as the variant's line reads it (forward_backward_ms: one slow
      // plain step off it is not a recompute that costs nothing), its optimizer step added back.
      const double plain_ms = polyline_at(fit_.deep_ms, x) + optimizer_d;
      const double k_b = static_cast<double>(q.ckpt_blocks) * block_ms(x);
      share_num += k_b * (q.step_ms - plain_ms);
      share_den += k_b * k_b;
    }
    if (q.ckpt_blocks == deep && (!all_checkpointed || q.batch > all_checkpointed->batch))
      all_checkpointed = &q;
  }
  // A profile of a space that checkpoints nothing has no checkpointed step (runners/profiler.h):
  // then checkpointed blocks are not predicted (check_layout).
  SLAPO_CHECK(!has_checkpointed_step(profile_) ||
                  (all_checkpointed != nullptr && all_checkpointed->batch > 1 &&
                   plain_at.count(all_checkpointed->batch)),
              ErrorCode::kInvalidArgument,
              "profile: needs a step with every block checkpointed at a batch of two or more also "
              "profiled without checkpointing");
  fit_.checkpointed = all_checkpointed != nullptr;
  // A block too small to time (B(x) = 0 within the noise) recomputes in no measurable time.
  fit_.recompute_share = share_den > 0 ? std::max(0.0, share_num / share_den) : 0.0;
  // What a checkpointed block keeps: a block's activations less what checkpointing every block
  // saved at that batch, against the step without checkpointing measured there; and what its
  // recompute calls more (a block's forward's collectives again), read there too.
  fit_.ckpt_block_kept = fit_.block_act;
  if (all_checkpointed) {
    const double x = static_cast<double>(all_checkpointed->batch);
    const ProfilePoint& plain = *plain_at.at(all_checkpointed->batch);
    const double saved = plain.peak_bytes - all_checkpointed->peak_bytes;
    fit_.ckpt_block_kept = std::max(0.0, fit_.block_act - saved / (d * x));
    const BlockBytes& alone = profile_.block_bytes;
    if (alone.checkpointed_measured) {
      // On one rank a checkpointed block keeps what it kept alone (stage_cost). The step with
      // every block checkpointed then peaks at the loss — d of them and the loss — or above
      // that, at the top block's recompute — d − 1 of them below it: there it is read (d·B + L −
      // saved/x a sample is the step less its state). gpt-tiny (2 blocks, sequence 16) peaks
      // there: a checkpointed block keeps 2.1 KB a sample, not the 8.4 KB that reading that step
      // as the loss's moment gave it — 1 of 2 blocks checkpointed at 600 samples was predicted
      // 9.6% over its trial, 2 of 2 9.1%. Where it peaks at the loss, the recompute is not
      // measured (a head that keeps less, the fused LM loss, can let it set the peak): composed as
      // before — llama-mini's fused head with every block checkpointed 1.2-3.6% over its trials;
      // read off that step, 2.7-3.8% under; as the block's recompute and backward measured alone,
      // 3.0-6.4% over (cost-heldout-llama-mini.toml, 2026-11-29).
      const double c = std::max(0.0, alone.ckpt_kept(x) / x);
      const double at_loss = plain.peak_bytes - x * d * (fit_.block_act - c);
      if (all_checkpointed->peak_bytes > (1 + kRecomputeAboveLoss) * at_loss) {
        fit_.recompute_act =
            std::max(0.0, d * fit_.block_act + fit_.loss_act - saved / x - (d - 1) * c);
        fit_.recompute_read_at = all_checkpointed->batch;
        fit_.recompute_read_loss_bytes = at_loss;
        // With the same step at one sample, a line: the recompute's constant part apart. Read
        // per sample at the largest batch alone, gpt-tiny's 34 KB of it were spread over 2,048
        // samples: 3.1% under its trials at 16 samples, 1.1% at 58; its three steps at 16, 58
        // and 2,048 samples and the one-sample one lie on one line to the byte.
        const ProfilePoint* one = nullptr;
        for (const ProfilePoint& q : profile_.points) {
          if (q.layers == deep && q.ckpt_blocks == deep && q.micro_batches == 1 && q.batch == 1)
            one = &q;
        }
        if (one != nullptr && x > 1) {
          const double slope = (all_checkpointed->peak_bytes - one->peak_bytes) / (x - 1);
          const double at0 = one->peak_bytes - slope;
          const double per_sample = slope - (d - 1) * alone.ckpt_kept_per_sample -
                                    profile_.shape.profiled_input_bytes_per_sample;
          const double constant = at0 - state_d - (d - 1) * alone.ckpt_kept_at0;
          if (per_sample >= 0 && constant >= 0) {
            fit_.recompute_act = per_sample;
            fit_.recompute_at0 = constant;
          }
        }
      }
    }
    const CollectiveTally more = all_checkpointed->collectives - plain.collectives;
    fit_.recompute_all_reduce = {more.all_reduce_calls / d, 0, more.all_reduce_bytes / (d * x)};
  }
  // As a multiple of the parameters' state (a block's bytes a parameter), not of the state fitted
  // outside the blocks, which also holds what the head keeps whatever the batch past some batch:
  // the fused LM loss's chunk of logits, 16 MiB on gpt-tiny with a vocabulary of 16,384, where
  // the parameters' state is 10 MB — its least peak was predicted 28 MB at 4 samples, 15 measured.
  const ModelShape& shape = profile_.shape;
  const double per_param = state_per_param();
  const double param_state_d = per_param > 0 ? per_param * shape.variant_params(d) : state_d;
  fit_.least_ratio = param_state_d > 0 ? std::max(1.0, least_peak / param_state_d) : 1.0;
}

double Predictor::state_per_param() const {
  const double block = profile_.shape.block_params;
  return block > 0 ? fit_.block_state / block : 0;
}

Predictor::LeastPeak Predictor::least_peak(double param_state, double largest, bool whole,
                                           double in_flight) const {
  const double temps = profile_.optimizer_temp_bytes_per_element;
  if (temps < 0 || largest <= 0)
    return {fit_.least_ratio * param_state, PeakMoment::kOptimizerStep};
  const double optimizer_step = param_state + temps * largest;
  const double least = fit_.least_ratio * param_state;
  if (!whole || least <= optimizer_step) return {optimizer_step, PeakMoment::kOptimizerStep};
  return {least + in_flight, PeakMoment::kLeastProfiled};
}

double Predictor::block_ms(double samples) const {
  return std::max(0.0,
                  (polyline_at(fit_.deep_ms, samples) - polyline_at(fit_.shallow_ms, samples)) /
                      static_cast<double>(fit_.deep_layers - 1));
}

double Predictor::outside_ms(double samples) const {
  return std::max(0.0, polyline_at(fit_.shallow_ms, samples) - block_ms(samples));
}

void Predictor::check_layout(const PredictInput& in) const {
  SLAPO_CHECK(in.ckpt_blocks == 0 || fit_.checkpointed, ErrorCode::kInvalidArgument,
              "checkpointed blocks: the profile has no checkpointed step (it was measured for a "
              "space that checkpoints none)");
  SLAPO_CHECK(std::max<int64_t>(1, in.tp) == profile_.tp, ErrorCode::kInvalidArgument,
              "tp = ", in.tp, " is not the profile's tp = ", profile_.tp);
  const int64_t world = profile_.tp * std::max<int64_t>(1, in.pp) * std::max<int64_t>(1, in.dp);
  SLAPO_CHECK(world == 1 || collectives_, ErrorCode::kInvalidArgument, "a layout of ", world,
              " ranks needs the machine's collectives profiled");
}

Predictor::StageCost Predictor::stage_cost(const PredictInput& in, int64_t stage, int64_t begin,
                                           int64_t end) const {
  const int64_t p = std::max<int64_t>(1, in.pp), dp = std::max<int64_t>(1, in.dp);
  const int64_t m = std::max<int64_t>(1, in.micro_batches), tp = profile_.tp;
  const double x = samples_per_micro_batch(in);
  const ModelShape& shape = profile_.shape;
  const bool first = stage == 0, last = stage == p - 1;
  const double n = static_cast<double>(end - begin);
  const double k = static_cast<double>(std::max<int64_t>(0, std::min(in.ckpt_blocks, end) - begin));
  auto comm_ms = [&](const CommLine& ar, const CommLine& ag, double times) {
    if (tp <= 1 || times <= 0) return 0.0;
    return times *
           (collectives_->all_reduce_ms(ar.bytes_at0 + ar.bytes_per_sample * x, tp, ar.calls) +
            collectives_->all_gather_ms(ag.bytes_at0 + ag.bytes_per_sample * x, tp, ag.calls));
  };
  StageCost st;
  // Per micro-batch: the blocks, the embeddings (first), the head and loss (last).
  const double outside = outside_ms(x);
  const double prologue = std::min(outside, profile_.prologue_ms_per_sample * x);
  st.compute = n * block_ms(x) + (first ? prologue : 0) + (last ? outside - prologue : 0);
  st.recompute = k * fit_.recompute_share * block_ms(x);
  st.comm = comm_ms(fit_.block_all_reduce, fit_.block_all_gather, n) +
            (last ? comm_ms(fit_.outside_all_reduce, fit_.outside_all_gather, 1) : 0) +
            comm_ms(fit_.recompute_all_reduce, CommLine{}, k);
  if (p > 1) {
    // Its input from the previous stage and its output's gradient from the next.
    const double message = collectives_->send_ms(shape.message_bytes_per_sample * x);
    st.comm += ((first ? 0 : 1) + (last ? 0 : 1)) * message;
  }
  st.micro_batch_ms = st.compute + st.recompute + st.comm;
  // Once per step: the optimizer, the data-parallel gradients, the tied gradient.
  const double outside_params = shape.prologue_params + shape.epilogue_params - shape.tied_params;
  double outside_state = fit_.outside_state;
  st.params = n * shape.block_params + outside_params;
  // A parameter's bytes of state (itself, its gradient, the optimizer's), read off the blocks: the
  // state fitted outside them also holds what the head keeps whatever the batch.
  const double per_param = state_per_param();
  if (p > 1) {
    const double share = (first ? shape.prologue_params : 0) + (last ? shape.epilogue_params : 0);
    st.params = n * shape.block_params + share;
    // The embeddings' state is their parameters' at a block's bytes a parameter (the same
    // optimizer); the rest of what the model holds outside its blocks — the head's state, and
    // what its loss holds whatever the batch (the fused LM loss's chunk of logits) — is the last
    // stage's. Split by the parameters, bert-mini's fused head put half of its chunk on the first
    // stage: 7.9 MiB, its trials 6.9% under the prediction.
    const double prologue = std::min(fit_.outside_state, shape.prologue_params * per_param);
    const double untied = (shape.prologue_params - shape.tied_params) * per_param;
    if (per_param <= 0) {
      outside_state = outside_params > 0 ? fit_.outside_state * share / outside_params : 0;
    } else {
      outside_state = (first ? prologue : 0) +
                      (last ? std::max(0.0, fit_.outside_state - std::min(prologue, untied)) : 0);
    }
  }
  st.optimizer = profile_.optimizer_ms_per_param * st.params;
  st.tail = st.optimizer;
  if (dp > 1) {
    const double bytes = kFloatBytes * st.params;
    st.tail += collectives_->gradient_sync_ms(bytes, dp, kGradientBucketBytes);
  }
  if (p > 1 && (first || last) && shape.tied_params > 0)
    st.tail += collectives_->all_reduce_ms(kFloatBytes * shape.tied_params, 2);
  // Memory: the state, and the micro-batches in flight.
  st.state = n * fit_.block_state + outside_state;
  const double in_flight =
      in.gpipe ? static_cast<double>(m) : static_cast<double>(std::min<int64_t>(m, p - stage));
  // What a checkpointed block keeps a sample. On one rank, what it kept alone (its constant part,
  // the RNG state the checkpoint holds — 5 KB on this LibTorch — spread over x). A pipeline's
  // stages keep the fit's (what checkpointing saved on the whole model, per block): on
  // cost-heldout-bert-parallel.toml the measured one put a last stage with its fused head 2.3%
  // under its trials, where the fit's is 3.8% over (its received input, and what the whole
  // model's recompute holds that a stage's does not: not measured apart).
  const BlockBytes& alone = profile_.block_bytes;
  const bool one_rank_alone = p == 1 && alone.checkpointed_measured && x > 0;
  const double ckpt_kept =
      one_rank_alone ? std::max(0.0, alone.ckpt_kept(x) / x) : fit_.ckpt_block_kept;
  const double kept = (n - k) * fit_.block_act + k * ckpt_kept;
  // On the last stage, the loss's kept part per micro-batch in flight. The peak is either at the
  // head — every micro-batch in flight keeping its blocks' part, the last stage's loss running
  // backward — or when the stage recomputes its first checkpointed block from the top: the
  // checkpointed blocks are the first ones (models/template_knobs.cc), so by then the micro-batch's
  // plain blocks and its loss have run backward and are freed; the other micro-batches in flight
  // keep theirs.
  const double loss_kept = last ? fit_.outside_kept : 0;
  const double loss_transient = last ? fit_.loss_act - fit_.outside_kept : 0;
  const double at_head = in_flight * (kept + loss_kept) + loss_transient;
  // A parameter's bytes of state (itself, its gradient, the optimizer's), read off the blocks: the
  // state fitted outside them also holds what the head keeps whatever the batch (the fused LM
  // loss's chunk of logits), gone once the loss has run backward.
  const double param_state = per_param > 0 ? per_param * st.params : st.state;
  // One rank's top checkpointed block's recompute as the fit read it (Fit::recompute_act), where
  // it did. Else, with the block measured alone, composed of what was measured: the parameters'
  // state (the head's buffers gone), the gradient of a weight the head ties to the embedding (the
  // autograd engine holds the head's part until the embedding's backward adds its own), the k
  // checkpointed blocks as kept alone, the top one's activations recomputed and its backward, and
  // the gradient it receives — table 5's gpt-mini with its fused loss, every block checkpointed,
  // to within 5.4 kB of its trials at 24, 40 and 60 samples, where the line through the loss's
  // moment said 5–8% more (its state holds the loss's chunk, and the blocks as checkpointing saved
  // them at that moment). Else the checkpointed blocks as the fit reads them, and a block's
  // activations recomputed (a stage before the last adds its backward and gradient below, as at
  // its top block's backward).
  const bool recompute_read = one_rank_alone && fit_.recompute_read_at > 0;
  const bool recompute_alone = one_rank_alone && !recompute_read && alone.measured;
  const double others_in_flight = (in_flight - 1) * (kept + loss_kept);
  double recomputing = 0;
  if (k > 0 && recompute_read) {
    recomputing =
        others_in_flight + (k - 1) * ckpt_kept + fit_.recompute_act + fit_.recompute_at0 / x;
  } else if (k > 0 && recompute_alone) {
    const double tied_gradient = kFloatBytes * shape.tied_params;
    recomputing = others_in_flight + k * ckpt_kept + shape.message_bytes_per_sample +
                  (alone.kept(x) + alone.backward(x) + tied_gradient + param_state - st.state) / x;
  } else if (k > 0) {
    recomputing = others_in_flight + k * fit_.ckpt_block_kept + fit_.block_act;
  }
  st.logits = x * (in_flight * loss_kept + loss_transient);
  // The whole model on one stage: the deep variant's measured peaks against the fitted line
  // (Fit::deep_bend), interpolated between its batches (beyond them, the nearest one's). Above it
  // (a bend between the largest batches and the smaller ones), the prediction is raised to them at
  // every moment: an under-prediction is a trial run into out of memory, and the budget's edge
  // lies between the measured batches. Below it (the fused LM loss's chunk of logits, which grows
  // with the tokens up to a chunk and no further: the line through the two largest batches passes
  // over the smaller ones — 8 MiB, 6%, at 8 samples of table 5's gpt-mini), the head's moment is
  // lowered to them: that buffer is the loss's, gone by a checkpointed block's recompute.
  double bend = 0;
  if (p == 1 && fit_.deep_bend.size() >= 2) {
    const double lo = fit_.deep_bend.front().first, hi = fit_.deep_bend.back().first;
    bend = polyline_at(fit_.deep_bend, std::clamp(x, lo, hi));
  }
  // What the head's moment holds above the state (negative: the fitted state itself holds the
  // chunk the smaller batch does not fill, down to the parameters' own).
  const double head_bytes = std::max(param_state - st.state, x * at_head + std::min(0.0, bend));
  const bool at_recompute = k > 0 && x * recomputing > head_bytes;
  if (at_recompute) {
    st.activations = std::max(0.0, x * recomputing - st.logits);
  } else {
    // Below the line, what the loss holds goes first (its logits), then the rest.
    st.logits = std::clamp(head_bytes, 0.0, st.logits);
    st.activations = std::max(0.0, head_bytes - st.logits);
    st.state += std::min(0.0, head_bytes);
  }
  // A stage before the last runs no loss: it peaks in a block's backward — its top block's, or the
  // checkpointed one's it recomputes —, every micro-batch in flight keeping its blocks' part, the
  // gradient the block receives and what its backward needs above them (measured on one block).
  // Without them mlp-mini's first of two stages at 16 samples was 18 MiB (5.3%) over its
  // prediction: its 2048-wide MLP's gradients, where a loss beside them would hide them.
  if (p > 1 && !last)
    st.activations += x * shape.message_bytes_per_sample + profile_.block_bytes.backward(x);
  st.activations += std::max(0.0, bend);
  // At the least, the optimizer step: the stage's state and the temporaries of its largest
  // parameter (an embedding or head where the stage holds one, else a block's). Measured on
  // llama-mini's first of two stages: 16 MiB above its state, twice its 8 MiB embedding, where
  // the whole model's least peak as a ratio of its state gave it 9.4 (its trials 6.9% over).
  const double largest = std::max({n > 0 ? shape.largest_block_tensor : 0.0,
                                   first ? shape.largest_prologue_tensor : 0.0,
                                   last ? shape.largest_epilogue_tensor : 0.0});
  double held = st.state + st.activations + st.logits;
  // On one rank, the other micro-batches in flight at the least moment of a micro-batch's backward
  // keep their part: two GPipe micro-batches of one sample, every block checkpointed, peaked 6%
  // above the least on gpt-tiny.
  // What the parameters hold at the optimizer step (param_state): the head's buffers are gone by
  // then too (gpt-neo-125m at 4 blocks, 4 samples over two ranks, LibTorch's AdamW: 15.7 MB, its
  // optimizer step predicted 538.4 MB where the step peaked at 529.8 MB, in the gradients'
  // averaging).
  LeastPeak least =
      least_peak(param_state, largest, p == 1, (in_flight - 1) * x * (kept + loss_kept));
  // Under data parallelism, between the backward and the optimizer step the gradients are averaged
  // a bucket at a time, each bucket packed into a tensor of its own beside the parameters, their
  // gradients and the optimizer's state (schedule/runtime/data_parallel.h): a bucket's bytes, or a
  // gradient's where one is larger. It sets the peak where the optimizer's temporaries are fewer —
  // gpt-neo-125m at 4 blocks, 4 samples over two ranks, the fused AdamW: 529,816,108 bytes
  // measured, 16 bytes a parameter and a 25 MiB bucket, where the loss's backward was predicted at
  // 526.6 MB. Beside the parameters' state as the optimizer step's (15.7 MB less than the
  // state fitted there: 3% over with it).
  if (dp > 1) {
    const double bucket =
        std::max(std::min(kGradientBucketBytes, kFloatBytes * st.params), kFloatBytes * largest);
    const double averaging = param_state + bucket;
    if (averaging > least.bytes) least = {averaging, PeakMoment::kGradientAveraging};
  }
  // The step's token batch, held at every moment of it — the whole batch's on every rank (a
  // micro-batch's were in the profile's steps: loss_act, the least profiled peak's one sample).
  st.inputs = profile_.shape.input_bytes(static_cast<double>(in.batch));
  if (least.at == PeakMoment::kLeastProfiled)
    least.bytes -= profile_.shape.profiled_input_bytes_per_sample;
  held += st.inputs;
  least.bytes += st.inputs;
  if (least.bytes > held) {
    st.peak_at = least.at;
  } else if (at_recompute) {
    st.peak_at = PeakMoment::kRecompute;
  } else {
    st.peak_at = p > 1 && !last ? PeakMoment::kTopBlockBackward : PeakMoment::kLossBackward;
  }
  st.peak_bytes = std::max(held, least.bytes) * memory_scale_;
  return st;
}

double Predictor::step_overhead_ms(const PredictInput& in) const {
  const int64_t world = profile_.tp * std::max<int64_t>(1, in.pp) * std::max<int64_t>(1, in.dp);
  // The loss, averaged over the world (which lines the ranks up).
  return world > 1 ? collectives_->all_reduce_ms(8, world) : 0;
}

Prediction Predictor::raw(const PredictInput& in) const {
  check_layout(in);
  const int64_t layers = profile_.layers, p = std::max<int64_t>(1, in.pp);
  SLAPO_CHECK(static_cast<int64_t>(in.cuts.size()) == p - 1, ErrorCode::kInvalidArgument, p,
              " pipeline stages need ", p - 1, " cuts, not ", in.cuts.size());
  std::vector<int64_t> begins = {0};
  for (int64_t c : in.cuts) {
    SLAPO_CHECK(c > begins.back() && c < layers, ErrorCode::kInvalidArgument, "cut at block ", c,
                " does not split blocks 0..", layers - 1, " into stages of one block or more");
    begins.push_back(c);
  }
  begins.push_back(layers);
  std::vector<StageCost> stages;
  for (int64_t s = 0; s < p; ++s) stages.push_back(stage_cost(in, s, begins[s], begins[s + 1]));

  // The step: fill and drain, the slowest stage m − 1 more times, the slowest tail.
  size_t slowest = 0, worst_tail = 0, largest = 0;
  double sum_t = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    sum_t += stages[s].micro_batch_ms;
    if (stages[s].micro_batch_ms > stages[slowest].micro_batch_ms) slowest = s;
    if (stages[s].tail > stages[worst_tail].tail) worst_tail = s;
    if (stages[s].peak_bytes > stages[largest].peak_bytes) largest = s;
  }
  const StageCost& b = stages[slowest];
  const double m = static_cast<double>(std::max<int64_t>(1, in.micro_batches));
  const double overhead = step_overhead_ms(in);
  const StageCost& tail = stages[worst_tail];
  Prediction out;
  out.step_ms = sum_t + (m - 1) * b.micro_batch_ms + tail.tail + overhead;
  out.time_ms = {{"compute", m * b.compute},
                 {"recompute", m * b.recompute},
                 {"collectives", m * b.comm + (tail.tail - tail.optimizer) + overhead},
                 {"bubble", sum_t - b.micro_batch_ms},
                 {"optimizer", tail.optimizer}};
  // The largest rank's memory (stage_cost scaled the peak; the parts are scaled likewise).
  const StageCost& big = stages[largest];
  out.peak_bytes = big.peak_bytes;
  out.peak_at = big.peak_at;
  const double params = kFloatBytes * big.params * memory_scale_;
  const double state = big.state * memory_scale_, logits = big.logits * memory_scale_;
  const double inputs = big.inputs * memory_scale_;
  out.memory_bytes = {{"parameters", std::min(params, state)},
                      {"gradients", std::min(params, std::max(0.0, state - params))},
                      {"optimizer_state", std::max(0.0, state - 2 * params)},
                      {"activations", big.peak_bytes - state - logits - inputs},
                      {"logits", logits},
                      {"inputs", inputs}};
  for (size_t s = 0; s < stages.size(); ++s)
    out.stages.push_back({begins[s + 1] - begins[s], stages[s].micro_batch_ms, stages[s].peak_bytes,
                          stages[s].peak_at});
  if (collectives_) {
    for (int64_t ranks : {profile_.tp, std::max<int64_t>(1, in.dp), p}) {
      if (collectives_->extrapolates(ranks)) {
        out.notes.push_back("collectives of " + std::to_string(ranks) +
                            " ranks extrapolated from the measured group by the ring formulas");
        break;
      }
    }
  }
  if (layers != fit_.deep_layers) {
    out.notes.push_back(std::to_string(layers) + " blocks composed from variants of 1 and " +
                        std::to_string(fit_.deep_layers));
  }
  // Past the profiled batches nothing was measured: say so (under a budget, only configurations
  // predicted out of memory are there).
  double profiled = 0;
  for (const auto& [batch, ms] : fit_.deep_ms) profiled = std::max(profiled, batch);
  const double micro = samples_per_micro_batch(in);
  if (profiled > 0 && micro > profiled) {
    std::ostringstream note;
    note << micro << " samples a micro-batch extrapolated past the largest profiled batch ("
         << profiled << "): time along the last profiled segment, memory along its line";
    out.notes.push_back(note.str());
  }
  return out;
}

Prediction Predictor::predict(const PredictInput& in) const {
  Prediction p = raw(in);
  const double time_scale = this->time_scale(in);
  p.step_ms *= time_scale;
  for (auto& [name, v] : p.time_ms) v *= time_scale;
  for (StagePrediction& s : p.stages) s.micro_batch_ms *= time_scale;
  // The throughputs, as a trial reports them: the global batch over the step.
  p.samples_per_s = p.step_ms > 0 ? static_cast<double>(in.batch) / (p.step_ms / 1000) : 0;
  p.tokens_per_s = p.samples_per_s * in.tokens_per_sample;
  p.tflops = p.samples_per_s * in.flops_per_sample / 1e12;
  return p;
}

double Predictor::time_scale(const PredictInput& in) const {
  if (observed_.empty()) return 1.0;
  std::vector<double> all;
  for (const Observed& o : observed_) all.push_back(o.log_ratio);
  const double layers = static_cast<double>(profile_.layers);
  double sum = median(all), weights = 1;  // the prior: every trial's median
  for (const Observed& o : observed_) {
    const double size = std::log2(samples_per_micro_batch(in) / samples_per_micro_batch(o.in));
    const double checkpointed = 2 * static_cast<double>(in.ckpt_blocks - o.in.ckpt_blocks) / layers;
    const double layout =
        0.5 * ((in.tp != o.in.tp) + (in.pp != o.in.pp) + (in.dp != o.in.dp) +
               (in.micro_batches != o.in.micro_batches) + (in.gpipe != o.in.gpipe));
    const double w = std::exp(-(size * size + checkpointed * checkpointed + layout) / 2);
    sum += w * o.log_ratio;
    weights += w;
  }
  return std::exp(sum / weights);
}

void Predictor::calibrate(const PredictInput& in, double step_ms, double peak_bytes) {
  const Prediction p = raw(in);  // the peak scaled by memory_scale_, the time not
  if (p.step_ms > 0 && step_ms > 0) observed_.push_back({in, std::log(step_ms / p.step_ms)});
  if (p.peak_bytes > 0 && peak_bytes > 0)
    memory_scale_ = std::max(memory_scale_, memory_scale_ * peak_bytes / p.peak_bytes);
}

void Predictor::calibrate_oom(const PredictInput& in, double budget_bytes) {
  const Prediction p = raw(in);
  if (p.peak_bytes > 0)
    memory_scale_ = std::max(memory_scale_, memory_scale_ * budget_bytes / p.peak_bytes * 1.0001);
}

}  // namespace slapo::cost
