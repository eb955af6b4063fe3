#include "runners/derived_profiles.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <torch/torch.h>

#include "core/error.h"
#include "cost/derived_profile.h"
#include "cost/head_difference.h"
#include "cost/optimizer_swap.h"
#include "models/templates.h"
#include "runners/block_probe.h"
#include "runners/profile_shape.h"
#include "runners/profile_sweep.h"

namespace slapo::runners {

std::vector<cost::Profile> measure_derived(const Workload& w, const std::vector<Config>& knobs,
                                           const cost::Profile& base, const Config& base_knobs) {
  int64_t deep = 0;
  for (const cost::ProfilePoint& q : base.points) deep = std::max(deep, q.layers);
  std::set<int64_t> batches, checkpointed_at;
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers != deep || q.micro_batches != 1 || q.derived) continue;
    if (q.ckpt_blocks == 0) batches.insert(q.batch);
    if (q.ckpt_blocks == deep) checkpointed_at.insert(q.batch);
  }
  batches.insert(checkpointed_at.begin(), checkpointed_at.end());
  const std::vector<std::vector<cost::BlockDifference>> differences = probe_block_differences(
      w, base_knobs, knobs, std::vector<int64_t>(batches.begin(), batches.end()), 0);
  std::vector<cost::Profile> out;
  for (size_t i = 0; i < knobs.size(); ++i) {
    std::vector<cost::BlockDifference> d = differences[i];
    for (const cost::BlockDifference& plain : differences[i]) {
      if (checkpointed_at.count(plain.batch)) d.push_back(cost::checkpointed_from_plain(plain));
    }
    // The base's parameters outside the blocks (the same embeddings and head), the probed block's
    // inside: no model of the key is built but its one block.
    cost::ModelShape shape = base.shape;
    shape.block_params += differences[i].front().params;
    out.push_back(cost::derive_profile(base, cost::deep_steps_from_blocks(base, d, shape), shape));
    out.back().block_bytes = cost::block_bytes_from(base, differences[i]);
  }
  return out;
}

cost::Profile measure_across_head(const Workload& w, const Config& knobs, const Config& base_knobs,
                                  const cost::Profile& base) {
  std::map<int64_t, std::set<int64_t>> batches;           // by micro-batches
  std::map<std::pair<int64_t, int64_t>, double> base_ms;  // by (micro-batches, batch)
  std::vector<PeakAt> base_peaks;                         // one micro-batch's
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers != 1 || q.ckpt_blocks != 0 || q.derived) continue;
    batches[q.micro_batches].insert(q.batch);
    base_ms[{q.micro_batches, q.batch}] = q.step_ms;
    if (q.micro_batches == 1) base_peaks.push_back({q.batch, q.peak_bytes});
  }
  SLAPO_CHECK(batches.count(1), ErrorCode::kInvalidArgument,
              "deriving a profile across the head: the base has no measured one-block step");
  // Under tensor parallelism, as one rank of the base's group: the collectives counted, the
  // head's parameters this rank's shard.
  const int tp = static_cast<int>(base.tp);
  cost::Profile own;
  own.layers = base.layers;
  own.tp = base.tp;
  own.shape = model_shape(w, knobs, tp);
  const cost::OutsideParams more = cost::outside_params_more(own.shape, base.shape);
  // One micro-batch: the new key's one-block steps and the base's, in this process, twice, the
  // order switching; what the head costs more there is their paired difference
  // (cost::paired_head_ms: 0 unless both rounds agree), added to the base's time. Several
  // micro-batches (a GPipe point): the bytes alone, the time the base's. A batch new to a sweep
  // meets a heap made resident up to the base's peak there, which its profile knows, rather than
  // an untimed step: those were a quarter to a third of the key's profile (table 5's fused loss,
  // 3.6-3.9 s against 2.8-2.9), and the first timed steps fault no more pages in (none there).
  const std::vector<int64_t> one_micro(batches.at(1).begin(), batches.at(1).end());
  std::map<int64_t, std::vector<double>> paired;  // by batch: each round's difference
  std::vector<cost::ProfilePoint> own_one;
  for (int round = 0; round < 2; ++round) {
    std::map<int64_t, double> ms[2];  // the base's, the new key's
    for (const int which : round == 0 ? std::vector<int>{1, 0} : std::vector<int>{0, 1}) {
      for (const cost::ProfilePoint& q :
           measure_sweep(w, which == 1 ? knobs : base_knobs, tp,
                         Sweep(1, 0, 1, one_micro)
                             .meeting_new_batches(NewBatch::kTouchHeap)
                             .knowing(base_peaks))) {
        ms[which][q.batch] = q.step_ms;
        if (which == 1 && round == 0) own_one.push_back(q);
      }
    }
    for (const auto& [batch, own_ms] : ms[1]) paired[batch].push_back(own_ms - ms[0].at(batch));
  }
  for (cost::ProfilePoint q : own_one) {
    q.step_ms = base_ms.at({1, q.batch}) + cost::paired_head_ms(paired[q.batch]) +
                base.optimizer_ms_per_param * more.total();
    own.points.push_back(q);
  }
  for (const auto& [micro, at] : batches) {
    if (micro == 1) continue;
    for (cost::ProfilePoint q :
         measure_sweep(w, knobs, tp, Sweep(1, 0, micro, {at.begin(), at.end()}))) {
      q.step_ms = base_ms.at({micro, q.batch}) + base.optimizer_ms_per_param * more.total();
      own.points.push_back(q);
    }
  }
  auto embed_shard = [&](const Config& c) {
    return models::parse_template_config(w.schedule_template(), w.spec(), c).embed_shard;
  };
  if (embed_shard(knobs) != embed_shard(base_knobs)) {
    for (const cost::ProfilePoint& q : base.points) {
      if (q.layers == 1 || q.ckpt_blocks == 0 || q.micro_batches != 1 || q.derived) continue;
      for (const cost::ProfilePoint& c :
           measure_sweep(w, knobs, tp, Sweep(q.layers, q.ckpt_blocks, 1, {q.batch})))
        own.points.push_back(c);
    }
  }
  return cost::shift_head(base, cost::head_differences(base, own), more);
}

cost::Profile measure_across_optimizer(const Workload& w, const Config& knobs,
                                       const models::TemplateConfig& tc, const Config& base_knobs,
                                       const cost::Profile& base, int64_t few) {
  const int tp = static_cast<int>(base.tp);
  int64_t deep = 0;
  for (const cost::ProfilePoint& q : base.points) deep = std::max(deep, q.layers);
  // A step that counts for nothing first, as a whole profile's (measure_profiles).
  measure_sweep(w, knobs, tp, Sweep(1, 0, 1, {}).two_steps_up_to(few));
  // The base's optimizer within the deep variant's one-sample step.
  std::vector<double> base_ms;
  measure_sweep(w, base_knobs, tp,
                Sweep(deep, 0, 1, {1}).two_steps_up_to(few).adding_optimizer_ms_to(&base_ms));
  // The optimizer-bound steps, a sweep per variant (blocks, checkpointed blocks, micro-batches),
  // ascending: the deep variant's plain sweep — it always holds the one-sample step — times this
  // key's optimizer there first.
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<int64_t>> sweeps;
  for (const cost::ProfilePoint& q : cost::optimizer_bound_points(base))
    sweeps[{q.layers, q.ckpt_blocks, q.micro_batches}].push_back(q.batch);
  std::vector<cost::ProfilePoint> measured;
  std::vector<double> own_ms;
  for (auto& [variant, batches] : sweeps) {
    const auto [depth, ckpt, micro] = variant;
    std::sort(batches.begin(), batches.end());
    const bool deep_plain = depth == deep && ckpt == 0 && micro == 1;
    for (const cost::ProfilePoint& q : measure_sweep(
             w, knobs, tp,
             Sweep(depth, ckpt, micro, batches)
                 .two_steps_up_to(few)
                 .meeting_new_batches(depth == 1 ? NewBatch::kStepUntimed : NewBatch::kTouchHeap)
                 .adding_optimizer_ms_to(deep_plain ? &own_ms : nullptr)))
      measured.push_back(q);
  }
  SLAPO_CHECK(!base_ms.empty() && !own_ms.empty(), ErrorCode::kInvalidArgument,
              "a profile derived across the optimizer needs its base's deep one-sample step");
  const double deep_params = base.shape.variant_params(static_cast<double>(deep));
  const double ms_per_param =
      std::max(0.0, base.optimizer_ms_per_param + (own_ms.front() - base_ms.front()) / deep_params);
  return cost::swap_optimizer(base, ms_per_param,
                              optimizer_temp_bytes_per_element(w, tc, deep_params), measured);
}

}  // namespace slapo::runners
