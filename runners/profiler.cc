#include "runners/profiler.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <set>

#include <cstdlib>
#include <ostream>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/stats.h"
#include "core/text.h"
#include "cost/derived_profile.h"
#include "dist/launcher.h"
#include "models/template_config.h"
#include "models/templates.h"
#include "models/zoo.h"
#include "runners/block_probe.h"
#include "runners/parallel_trainer.h"
#include "runners/simulated_group.h"
#include "schedule/kernels/fused_adamw.h"
#include "schedule/runtime/pipeline.h"

namespace slapo::runners {

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> ms;
  f();  // warm-up
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return median(ms);
}

// The groups of one process that computes what rank 0 of a tensor-parallel group of `tp` does.
dist::ParallelGroups simulated_groups(int tp, std::shared_ptr<SimulatedGroup>* group) {
  dist::ParallelGroups g = dist::local_groups();
  if (tp > 1) {
    *group = std::make_shared<SimulatedGroup>(tp);
    g.tp = *group;
    g.layout.tp = tp;
  }
  return g;
}

int64_t numel(const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  int64_t n = 0;
  for (const auto& [name, t] : params) n += t.numel();
  return n;
}

// The parameters of a block, of the prologue and of the epilogue, and the tied ones, as the
// schedule shards them: a two-block variant cut into two stages.
cost::ModelShape model_shape(const Workload& w, const Config& knobs, int tp) {
  models::ModelSpec spec = w.spec();
  spec.layers = 2;
  std::shared_ptr<SimulatedGroup> group;
  ParallelTrainer trainer({spec, w.schedule_template(), knobs, w.seed, w.optimizer, w.lr, {}},
                          simulated_groups(tp, &group));
  schedule::StagePlan plan;
  plan.stages = 2;
  plan.blocks = {{0, 1}, {1, 2}};
  const auto first = schedule::stage_parameters(trainer.model(), plan, 0);
  const auto last = schedule::stage_parameters(trainer.model(), plan, 1);
  const std::string block0 = spec.traits().blocks + ".0.";
  int64_t block = 0;
  for (const auto& [name, t] : first) {
    if (name.rfind(block0, 0) == 0) block += t.numel();
  }
  std::set<const c10::TensorImpl*> in_last;
  for (const auto& [name, t] : last) in_last.insert(t.unsafeGetTensorImpl());
  int64_t tied = 0;
  for (const auto& [name, t] : first) {
    if (in_last.count(t.unsafeGetTensorImpl())) tied += t.numel();
  }
  cost::ModelShape shape;
  shape.block_params = static_cast<double>(block);
  shape.prologue_params = static_cast<double>(numel(first) - block);
  shape.epilogue_params = static_cast<double>(numel(last) - block);
  shape.tied_params = static_cast<double>(tied);
  shape.message_bytes_per_sample =
      static_cast<double>(w.seq_len_for(knobs) * spec.hidden) * sizeof(float);
  return shape;
}

// One optimizer step over `params` parameters (one flat tensor), per parameter.
double optimizer_ms_per_param(const Workload& w, const models::TemplateConfig& tc, double params) {
  torch::Tensor p = torch::zeros({static_cast<int64_t>(params)}).requires_grad_();
  p.mutable_grad() = torch::full_like(p, 1e-3);
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  if (w.optimizer == "sgd")
    optimizer = std::make_unique<torch::optim::SGD>(std::vector<torch::Tensor>{p},
                                                    torch::optim::SGDOptions(w.lr));
  else if (tc.fused_adamw)
    optimizer = std::make_unique<schedule::FusedAdamW>(std::vector<torch::Tensor>{p},
                                                       torch::optim::AdamWOptions(w.lr));
  else
    optimizer = std::make_unique<torch::optim::AdamW>(std::vector<torch::Tensor>{p},
                                                      torch::optim::AdamWOptions(w.lr));
  return median_ms(5, [&] { optimizer->step(); }) / params;
}

// The embeddings' forward and backward, per sample, at `batch` samples.
double prologue_ms_per_sample(const Workload& w, const Config& knobs, int64_t batch) {
  models::ModelSpec spec = w.spec();
  spec.layers = 1;
  auto model = models::build_model(spec, w.seed);
  auto* pipelined = dynamic_cast<schedule::Pipelined*>(model.get());
  if (!pipelined) return 0;
  const torch::Tensor tokens =
      torch::randint(spec.vocab, {batch, w.seq_len_for(knobs)}, torch::kLong);
  return median_ms(3,
                   [&] {
                     model->zero_grad();
                     pipelined->prologue(tokens).sum().backward();
                   }) /
         static_cast<double>(batch);
}

}  // namespace

namespace {

// One profiling step of the variant of `depth` blocks, `ckpt` of them checkpointed, in `micro`
// GPipe micro-batches, as one rank of a tensor-parallel group of `tp` (collectives counted).
cost::ProfilePoint measure_point(const Workload& w, const Config& knobs, int tp, int64_t depth,
                                 int64_t batch, int64_t ckpt, int64_t micro) {
  Workload variant = w;
  variant.layers = depth;
  Config c = knobs;
  c.set("batch_size", Value(batch));
  c.set("ckpt_layers", Value(ckpt));
  if (micro > 1) {
    c.set("micro_batches", Value(micro));
    c.set("pipeline_schedule", Value(std::string("gpipe")));
  }
  std::shared_ptr<SimulatedGroup> group;
  const dist::ParallelGroups groups = simulated_groups(tp, &group);
  const TrialResult r = measure_trial(variant, c, groups);
  SLAPO_CHECK(r.status == TrialStatus::kOk, ErrorCode::kRuntime, "profiling ", c.to_string(),
              " with ", depth, " block(s) failed (", to_string(r.status),
              "): ", r.error.substr(0, r.error.find('\n')));
  cost::ProfilePoint p;
  p.layers = depth;
  p.batch = batch;
  p.ckpt_blocks = ckpt;
  p.micro_batches = micro;
  p.step_ms = r.metrics.at(metric::kStepMsMedian);
  p.peak_bytes = r.metrics.at(metric::kPeakBytes);
  if (group) {
    const double steps = static_cast<double>(variant.warmup + variant.steps);
    p.all_reduce_calls = static_cast<double>(group->all_reduces().calls) / steps;
    p.all_reduce_bytes = group->all_reduces().bytes / steps;
    p.all_gather_calls = static_cast<double>(group->all_gathers().calls) / steps;
    p.all_gather_bytes = group->all_gathers().bytes / steps;
  }
  return p;
}

// A key that differs from `base` (of `base_knobs`) only inside the blocks: the two keys' blocks
// alone (runners/block_probe.h) at the batches of the base's deep variant, and checkpointed at the
// largest batch the base was measured all-checkpointed at; the deep steps are composed from the
// base's and the rest is derived (cost/derived_profile.h).
cost::Profile measure_derived(const Workload& w, const Config& knobs, const cost::Profile& base,
                              const Config& base_knobs) {
  int64_t deep = 0, checkpointed_at = 0;
  for (const cost::ProfilePoint& q : base.points) deep = std::max(deep, q.layers);
  std::set<int64_t> batches;
  for (const cost::ProfilePoint& q : base.points) {
    if (q.layers != deep || q.micro_batches != 1 || q.derived) continue;
    if (q.ckpt_blocks == 0) batches.insert(q.batch);
    if (q.ckpt_blocks == deep) checkpointed_at = std::max(checkpointed_at, q.batch);
  }
  const std::vector<cost::BlockDifference> differences = probe_block_differences(
      w, base_knobs, knobs, std::vector<int64_t>(batches.begin(), batches.end()), checkpointed_at);
  const cost::ModelShape shape = model_shape(w, knobs, 1);
  return cost::derive_profile(base, cost::deep_steps_from_blocks(base, differences, shape), shape);
}

}  // namespace

cost::Profile measure_profile(const ProfileRequest& request) {
  const auto start = Clock::now();
  Workload w = request.workload;
  // One warm-up step and one timed step per point: against two and two, side by side, the same
  // within 2% at 40 samples (docs/cost-model.md), for half the profile. Points of a few samples,
  // where one hiccup of the machine weighs most and a step costs least, time two.
  w.warmup = 1;
  w.memory_budget = 0;  // the profile measures; the prediction decides what fits
  const int64_t few = std::max<int64_t>(request.batch_lo, 2);
  auto steps_at = [&](int64_t batch) {
    Workload v = w;
    v.steps = batch <= few ? 2 : 1;
    return v;
  };
  torch::set_num_threads(w.threads);
  const models::TemplateConfig tc =
      models::parse_template_config(w.schedule_template(), w.spec(), request.knobs);
  const int tp = tc.parallel.layout.tp;
  if (request.extend) {
    cost::Profile profile = *request.extend;
    int64_t deep = 0;
    for (const cost::ProfilePoint& q : profile.points) deep = std::max(deep, q.layers);
    // The deep variant alone: the model's own depth is measured, not composed, where the largest
    // batches that fit are; a block there is the deep step less the one-block variant's last
    // segment, extended (a pipeline stage of fewer blocks is all that reads it).
    profile.points.push_back(
        measure_point(steps_at(request.batch_hi), request.knobs, tp, deep, request.batch_hi, 0, 1));
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return profile;
  }
  if (request.base && tp == 1) {
    cost::Profile profile = measure_derived(w, request.knobs, *request.base, request.base_knobs);
    profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
    return profile;
  }
  const int64_t layers = w.spec().layers;
  const int64_t deep = std::clamp<int64_t>(layers, 2, 8);
  // Two batches above one sample, whatever the space's (memory is fitted over them).
  const int64_t hi = std::max<int64_t>(request.batch_hi, 3);
  const int64_t lo = std::clamp<int64_t>(request.batch_lo, 2, hi - 1);
  const int64_t mid = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(lo * hi))));

  cost::Profile profile;
  profile.layers = layers;
  profile.tp = tp;
  profile.shape = model_shape(w, request.knobs, tp);
  // (depth, batch, checkpointed blocks, GPipe micro-batches), the cheap ones first.
  std::vector<std::array<int64_t, 4>> points = {{1, 1, 0, 1},    {1, lo, 0, 1},
                                                {1, hi, 0, 1},   {1, 2 * lo, 0, 2},
                                                {deep, 1, 0, 1}, {deep, lo, 0, 1}};
  if (mid > lo && mid < hi) points.push_back({deep, mid, 0, 1});
  points.push_back({deep, hi, 0, 1});
  // At the largest batch: what a checkpointed block keeps is read per sample off this one step,
  // and what is not per sample (the fused head's chunk buffers) weighs least there — at the
  // middle batch the fused head's family was over-predicted by 8.7% (docs/benchmarks.md).
  points.push_back({deep, hi, deep, 1});
  points.push_back({deep, 1, deep, 1});
  // A step that counts for nothing first: a process's first steps run slower (thread pools, lazy
  // initialisation).
  measure_point(steps_at(1), request.knobs, tp, 1, 1, 0, 1);
  std::set<std::array<int64_t, 4>> seen;
  for (const auto& [depth, batch, ckpt, micro] : points) {
    if (!seen.insert({depth, batch, ckpt, micro}).second) continue;
    profile.points.push_back(
        measure_point(steps_at(batch), request.knobs, tp, depth, batch, ckpt, micro));
  }
  const cost::ModelShape& s = profile.shape;
  profile.optimizer_ms_per_param =
      optimizer_ms_per_param(w, tc,
                             static_cast<double>(deep) * s.block_params + s.prologue_params +
                                 s.epilogue_params - s.tied_params);
  profile.prologue_ms_per_sample = prologue_ms_per_sample(w, request.knobs, hi);
  profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();
  return profile;
}

std::string ProfileRequest::to_json() const {
  nlohmann::ordered_json j;
  j["workload"] = nlohmann::ordered_json::parse(workload.to_json());
  j["knobs"] = nlohmann::ordered_json::parse(knobs.to_json());
  j["batch_lo"] = batch_lo;
  j["batch_hi"] = batch_hi;
  if (base) {
    j["base"] = nlohmann::ordered_json::parse(base->to_json());
    j["base_knobs"] = nlohmann::ordered_json::parse(base_knobs.to_json());
  }
  if (extend) j["extend"] = nlohmann::ordered_json::parse(extend->to_json());
  return j.dump();
}

ProfileRequest ProfileRequest::from_json(const std::string& json, const std::string& origin) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  SLAPO_CHECK(j.is_object() && j.contains("workload") && j.contains("knobs") &&
                  j.value("batch_lo", 0) >= 1 && j.value("batch_hi", 0) >= 1,
              ErrorCode::kInvalidArgument, origin,
              ": not a profile request (workload, knobs, batch_lo, batch_hi)");
  ProfileRequest r;
  r.workload = Workload::from_json(j["workload"].dump(), origin);
  r.knobs = Config::from_json(j["knobs"].dump(), origin);
  r.batch_lo = j["batch_lo"].get<int64_t>();
  r.batch_hi = j["batch_hi"].get<int64_t>();
  if (j.contains("base")) {
    // Without its knobs the base's block could not be built: never guessed.
    SLAPO_CHECK(j.contains("base_knobs"), ErrorCode::kInvalidArgument, origin,
                ": a profile request with a base needs the base's knobs (base_knobs)");
    r.base = cost::Profile::from_json(j["base"].dump(), origin);
    r.base_knobs = Config::from_json(j["base_knobs"].dump(), origin);
  }
  if (j.contains("extend")) r.extend = cost::Profile::from_json(j["extend"].dump(), origin);
  return r;
}

void run_profile_worker(const std::string& request_json, std::ostream& out) {
  const cost::Profile profile =
      measure_profile(ProfileRequest::from_json(request_json, "--profile"));
  const char* rank = std::getenv("RANK");
  if (!rank || std::string(rank) == "0") out << profile.to_json() << std::endl;
}

cost::Profile measure_profile_beside_peers(const ProfileRequest& request, int ranks,
                                           const std::vector<std::string>& worker) {
  if (ranks <= 1) return measure_profile(request);
  dist::LaunchOptions launch;
  launch.nproc = ranks;
  launch.argv = worker;
  launch.argv.push_back("--profile");
  launch.argv.push_back(request.to_json());
  launch.env.emplace("OMP_WAIT_POLICY", "passive");
  const auto start = Clock::now();
  const dist::LaunchResult job = dist::launch_ranks(launch);
  SLAPO_CHECK(job.ok(), ErrorCode::kRuntime, "profiling failed: ", job.failure());
  cost::Profile profile =
      cost::Profile::from_json(last_line(job.ranks[0].out), "the profiling job");
  profile.profile_s = std::chrono::duration<double>(Clock::now() - start).count();  // launch too
  return profile;
}

}  // namespace slapo::runners
