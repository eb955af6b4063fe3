#include "cost/derived_profile.h"

#include <algorithm>
#include <map>

#include "core/error.h"
#include "cost/fit.h"
#include "cost/predictor.h"

namespace slapo::cost {

namespace {

// The collectives of one micro-batch of `x` samples outside the blocks, as `fit` reads them.
CollectiveTally outside_collectives(const Predictor::Fit& fit, double x) {
  const Predictor::CommLine& ar = fit.outside_all_reduce;
  const Predictor::CommLine& ag = fit.outside_all_gather;
  return {ar.calls, ar.bytes_at0 + ar.bytes_per_sample * x, ag.calls,
          ag.bytes_at0 + ag.bytes_per_sample * x};
}

}  // namespace

Profile derive_profile(const Profile& base, const std::vector<ProfilePoint>& deep_steps,
                       const ModelShape& shape) {
  const Predictor predictor(base);
  const Predictor::Fit& fb = predictor.fit();
  const int64_t deep = fb.deep_layers;
  const double d = static_cast<double>(deep);

  std::map<int64_t, const ProfilePoint*> plain;  // by batch
  const ProfilePoint* checkpointed = nullptr;
  for (const ProfilePoint& q : deep_steps) {
    SLAPO_CHECK(
        q.layers == deep && q.micro_batches == 1 && (q.ckpt_blocks == 0 || q.ckpt_blocks == deep),
        ErrorCode::kInvalidArgument,
        "a derived profile is measured on the base's deep "
        "variant of ",
        deep, " blocks, in one micro-batch, none or all checkpointed");
    if (q.ckpt_blocks == 0)
      plain[q.batch] = &q;
    else if (!checkpointed || q.batch > checkpointed->batch)
      checkpointed = &q;  // the recompute's share is read at the largest
  }
  std::vector<std::pair<double, double>> memory;  // above one sample: the activations' line
  for (const auto& [batch, q] : plain) {
    if (batch > 1) memory.emplace_back(static_cast<double>(batch), q->peak_bytes);
  }
  // A base of a space that checkpoints nothing has no checkpointed step: then neither has this.
  const bool checkpoints = has_checkpointed_step(base);
  SLAPO_CHECK(memory.size() >= 2 && (!checkpoints || (checkpointed && checkpointed->batch > 1 &&
                                                      plain.count(checkpointed->batch))),
              ErrorCode::kInvalidArgument,
              "a derived profile needs deep steps at two batches above one sample and one with "
              "every block checkpointed at one of them");

  auto optimizer_ms = [&](double blocks) {
    return base.optimizer_ms_per_param * shape.variant_params(blocks);
  };
  // A block of the new key at x samples: the base's, plus the deep variants' difference per block.
  auto new_block_ms = [&](const ProfilePoint& q) {
    const double x = static_cast<double>(q.batch);
    const double deep_fb = q.step_ms - optimizer_ms(d);
    return std::max(0.0, predictor.block_ms(x) + (deep_fb - polyline_at(fb.deep_ms, x)) / d);
  };
  // The one-block variant's step: the deep one without D − 1 of its blocks — and at least its
  // optimizer step: a tiny model's block probed on a noisy machine composed gpt-tiny's one-sample
  // step at tp = 2 as −0.44 ms once (its base's own fit put less than nothing outside the blocks
  // there), which no prediction takes — every configuration of the key was unpredictable.
  auto one_block_ms = [&](const ProfilePoint& q) {
    return std::max(optimizer_ms(1),
                    q.step_ms - optimizer_ms(d) - (d - 1) * new_block_ms(q) + optimizer_ms(1));
  };
  // Memory: the deep line minus the base's outside part, shared among the blocks.
  const auto [state_d, act_d] = fit_line(memory);
  const double block_state = (state_d - fb.outside_state) / d;
  const double block_act = (act_d - fb.outside_act) / d;
  const double state_1 = state_d - (d - 1) * block_state, act_1 = act_d - (d - 1) * block_act;

  Profile out;
  out.layers = base.layers;
  out.tp = base.tp;
  out.shape = shape;
  out.optimizer_ms_per_param = base.optimizer_ms_per_param;
  out.optimizer_temp_bytes_per_element = base.optimizer_temp_bytes_per_element;
  out.prologue_ms_per_sample = base.prologue_ms_per_sample;
  out.points = deep_steps;
  std::map<int64_t, CollectiveTally> one_block_collectives;  // by batch
  for (const auto& [batch, q] : plain) {
    ProfilePoint one;
    one.layers = 1;
    one.batch = batch;
    one.step_ms = one_block_ms(*q);
    one.peak_bytes =
        q->peak_bytes - (d - 1) * (block_state + block_act * static_cast<double>(batch));
    // The rest's collectives and one of the deep variant's D blocks'.
    const CollectiveTally rest = outside_collectives(fb, static_cast<double>(batch));
    one.collectives = rest + (q->collectives - rest) * (1 / d);
    one_block_collectives[batch] = one.collectives;
    one.derived = true;
    out.points.push_back(one);
  }
  // One sample, every block checkpointed — the least peak — where the steps lack it (a base
  // measured before 2026-11-28 has none): the base's least as a ratio of the state, the time with
  // the measured recompute share.
  const bool has_least = std::any_of(
      deep_steps.begin(), deep_steps.end(),
      [&](const ProfilePoint& q) { return q.ckpt_blocks > 0 && q.batch == plain.begin()->first; });
  if (checkpointed && plain.count(checkpointed->batch) && !has_least) {
    const ProfilePoint& at = *plain.at(checkpointed->batch);
    const double recompute_ms = std::max(0.0, checkpointed->step_ms - at.step_ms);
    const double share = new_block_ms(at) > 0 ? recompute_ms / (d * new_block_ms(at)) : 0.0;
    const ProfilePoint& smallest = *plain.begin()->second;
    ProfilePoint least = smallest;
    least.ckpt_blocks = deep;
    least.step_ms += d * share * new_block_ms(smallest);
    least.peak_bytes = fb.least_ratio * state_d;
    // The recompute's collectives: as many calls, bytes in proportion to the samples.
    const CollectiveTally more = checkpointed->collectives - at.collectives;
    const double scale = static_cast<double>(smallest.batch) / static_cast<double>(at.batch);
    least.collectives = smallest.collectives +
                        CollectiveTally{more.all_reduce_calls, more.all_reduce_bytes * scale,
                                        more.all_gather_calls, more.all_gather_bytes * scale};
    least.derived = true;
    out.points.push_back(least);
  }
  // Two GPipe micro-batches of the one-block variant: the loss keeps what the base's keeps — where
  // the base measured it (a profile of a space without them has none: runners/profiler.h).
  if (!has_gpipe_step(base)) return out;
  const double x = memory.front().first;
  ProfilePoint gpipe;
  gpipe.layers = 1;
  gpipe.micro_batches = 2;
  gpipe.batch = 2 * static_cast<int64_t>(x);
  // Two micro-batches' forward and backward, one optimizer step.
  gpipe.step_ms = 2 * one_block_ms(*plain.at(static_cast<int64_t>(x))) - optimizer_ms(1);
  gpipe.peak_bytes = state_1 + act_1 * x + x * (block_act + fb.outside_kept);
  gpipe.collectives = one_block_collectives.at(gpipe.batch / 2) * 2;
  gpipe.derived = true;
  out.points.push_back(gpipe);
  return out;
}

BlockDifference checkpointed_from_plain(const BlockDifference& plain) {
  BlockDifference out = plain;
  out.checkpointed = true;
  out.ms = plain.ms + plain.forward_ms;
  out.kept_bytes = 0;
  out.transient_bytes = plain.kept_bytes + plain.transient_bytes;
  out.collectives = plain.collectives + plain.forward_collectives;
  return out;
}

std::vector<ProfilePoint> deep_steps_from_blocks(const Profile& base,
                                                 const std::vector<BlockDifference>& differences,
                                                 const ModelShape& shape) {
  const Predictor predictor(base);
  const Predictor::Fit& fb = predictor.fit();
  const double d = static_cast<double>(fb.deep_layers);
  const double extra_params = shape.block_params - base.shape.block_params;
  const double state_per_param =
      base.shape.block_params > 0 ? fb.block_state / base.shape.block_params : 0.0;
  const double extra_optimizer_ms = base.optimizer_ms_per_param * d * extra_params;
  // The least a step of the new key's deep variant takes: its optimizer step.
  const double optimizer_ms = base.optimizer_ms_per_param * shape.variant_params(d);

  std::map<std::pair<int64_t, bool>, const BlockDifference*> by_point;  // (batch, checkpointed)
  for (const BlockDifference& b : differences) by_point[{b.batch, b.checkpointed}] = &b;
  auto difference = [&](int64_t batch, bool checkpointed) -> const BlockDifference& {
    auto it = by_point.find({batch, checkpointed});
    SLAPO_CHECK(it != by_point.end(), ErrorCode::kInvalidArgument,
                "deriving a profile from its blocks: no difference of the blocks measured at ",
                batch, checkpointed ? " samples checkpointed" : " samples",
                ", where the base's deep variant was");
    return *it->second;
  };
  auto compose = [&](const ProfilePoint& q, const BlockDifference& b) {
    ProfilePoint out = q;
    out.collectives = q.collectives + b.collectives * d;
    // A block is at best free, and a step takes at least its optimizer step: a difference larger
    // than the base's block is the probe's noise (bert-tiny's blocks of 1–2 ms, stalled by 4–8 ms
    // every other run), and composed as measured it made a derived key's steps take −5 ms and its
    // predictions 0.0 ms.
    const double own = predictor.block_ms(static_cast<double>(q.batch)) *
                       (q.ckpt_blocks > 0 ? 1 + fb.recompute_share : 1.0);
    out.step_ms = std::max(optimizer_ms, q.step_ms + d * std::max(b.ms, -own) + extra_optimizer_ms);
    // A transient that shrinks is not counted: the step may peak elsewhere (at the loss). Counted,
    // it under-predicted memory_efficient attention's checkpointed steps at sequence 256 by up to
    // 2.9%, whose peak is the head's; not counted, a tiny model's by up to 7% over.
    out.peak_bytes = q.peak_bytes + d * (state_per_param * extra_params + b.kept_bytes) +
                     std::max(0.0, b.transient_bytes);
    out.derived = true;
    return out;
  };

  std::vector<ProfilePoint> steps, checkpointed;
  for (const ProfilePoint& q : base.points) {
    if (q.layers != fb.deep_layers || q.micro_batches != 1 || q.derived) continue;
    if (q.ckpt_blocks == 0) {
      steps.push_back(compose(q, difference(q.batch, false)));
    } else if (q.ckpt_blocks == fb.deep_layers) {
      checkpointed.push_back(compose(q, difference(q.batch, true)));
    }
  }
  // A base of a space that checkpoints nothing has none: then neither has the new key.
  SLAPO_CHECK(!checkpointed.empty() || !has_checkpointed_step(base), ErrorCode::kInvalidArgument,
              "deriving a profile from its blocks: the base has no measured step with every block "
              "checkpointed");
  steps.insert(steps.end(), checkpointed.begin(), checkpointed.end());
  return steps;
}

BlockBytes block_bytes_from(const Profile& base, const std::vector<BlockDifference>& differences) {
  const BlockDifference *lo = nullptr, *hi = nullptr;
  for (const BlockDifference& d : differences) {
    if (d.checkpointed) continue;
    if (!lo || d.batch < lo->batch) lo = &d;
    if (!hi || d.batch > hi->batch) hi = &d;
  }
  if (!base.block_bytes.measured || !lo || lo->batch == hi->batch) return {};
  const double span = static_cast<double>(hi->batch - lo->batch),
               x = static_cast<double>(lo->batch);
  BlockBytes out = base.block_bytes;
  const double kept = (hi->kept_bytes - lo->kept_bytes) / span;
  out.kept_per_sample += kept;
  out.kept_at0 += lo->kept_bytes - kept * x;
  const double backward = (hi->transient_bytes - lo->transient_bytes) / span;
  out.backward_per_sample += backward;
  out.backward_at0 += lo->transient_bytes - backward * x;
  return out;
}

}  // namespace slapo::cost
