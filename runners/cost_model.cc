#include "runners/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/metrics.h"
#include "core/process.h"
#include "core/text.h"
#include "core/version.h"
#include "cost/head_difference.h"
#include "cost/profile_batches.h"
#include "models/template_knobs.h"
#include "models/templates.h"
#include "runners/available_memory.h"
#include "runners/collective_profile.h"
#include "runners/machine_memory.h"
#include "runners/profiler.h"
#include "runners/sweep_steps.h"  // expected_peak
#include "runners/system_info.h"

namespace slapo::runners {

namespace {

// A rank's threads: the workload's are the trial's, shared by its ranks (runners/worker.h).
int threads_per_rank(const Workload& w, int world) { return std::max(1, w.threads / world); }

// A rank of a job is profiled beside as many copies of itself as the job runs at once on this
// machine: they share its cores, memory bandwidth and caches.
int ranks_beside(int world) {
  // Read once: each call of hardware_concurrency reads sysfs (three system calls), and a plan
  // asks for every configuration's key.
  static const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::min<int>(world, cores);
}

constexpr int kCollectiveRanks = 2;  // the groups this machine runs: docs/cost-model.md

std::string collectives_key() {
  return nlohmann::json{{"collectives", {{"ranks", kCollectiveRanks}}}}.dump();
}

// Knobs the model predicts across: everything else (tp included: a rank's shard is another
// computation) changes the computation and is part of the profile key.
bool predicted_across(const std::string& knob) {
  static const char* const kKnobs[] = {
      "batch_size", "ckpt_ratio",        "ckpt_layers", "micro_batches",
      "pp",         "pipeline_schedule", "dp",          "cuts"};
  for (const char* k : kKnobs) {
    if (knob == k) return true;
  }
  return false;
}

// Knobs that say how tensor parallelism splits the model: with tp = 1 nothing is split and they
// change nothing (models/templates.cc applies them under tp > 1 alone) — a space that crosses them
// with tp would otherwise profile each single-rank key once per split: 48 profiles where 20 differ
// in examples/spaces/bert-tiny-parallel.toml.
bool splits_under_tp(const std::string& knob) {
  return knob == "attn_shard" || knob == "mlp_shard" || knob == "embed_shard";
}

// The knobs of `config` that change the computation.
Config computation_knobs(const Config& config) {
  const Value* tp = config.find("tp");
  const bool one_part = tp == nullptr || !is_number(*tp) || as_number(*tp) <= 1;
  Config c;
  for (const auto& [name, value] : config.entries()) {
    // tp = 1 is the default: a space with a tp knob shares its single-part profiles with one
    // without.
    if (predicted_across(name) || (one_part && (splits_under_tp(name) || name == "tp"))) continue;
    c.set(name, value);
  }
  return c;
}

// Knobs that change the computation of the blocks and of nothing else (not the embeddings, the
// final norm, the head, the loss or the optimizer): keys that differ only in them share what lies
// outside the blocks, and one is derived from another's profile (cost/derived_profile.h). How
// tensor parallelism splits attention and the MLP is among them: either way a block takes and
// hands on whole hidden states; what differs — its kernels and collectives — the block probe
// measures and counts.
bool within_blocks(const std::string& knob) {
  static const char* const kKnobs[] = {"attn",      "fuse_bias_gelu", "fuse_bias_dropout_add",
                                       "decompose", "attn_shard",     "mlp_shard"};
  for (const char* k : kKnobs) {
    if (knob == k) return true;
  }
  return false;
}

// The knobs of `config` that change the computation outside the blocks.
Config outside_block_knobs(const Config& config) {
  Config c;
  const Config computation = computation_knobs(config);
  for (const auto& [name, value] : computation.entries()) {
    if (!within_blocks(name)) c.set(name, value);
  }
  return c;
}

// Knobs that change the model's ends — the embeddings, and the head: the final norm, the LM head
// and its loss — and nothing else (not the blocks or the optimizer): a key that differs from
// another only in them is the other's profile shifted by what the work outside the blocks differs
// by (cost/head_difference.h). The fused LM loss changes the head; how tensor parallelism splits
// the embedding (`embed_shard`, part of a key under tp > 1 alone) changes the embeddings and the
// LM head tied to them, and their collectives.
bool within_ends(const std::string& knob) {
  return knob == "fused_lm_loss" || knob == "embed_shard";
}

// `config` with the ends' knobs of `ends` (those `ends` does not set: removed).
Config with_ends_of(const Config& config, const Config& ends) {
  Config c;
  for (const auto& [name, value] : config.entries()) {
    if (!within_ends(name)) c.set(name, value);
  }
  for (const auto& [name, value] : ends.entries()) {
    if (within_ends(name)) c.set(name, value);
  }
  return c;
}

bool is_derived(const cost::Profile& p) {
  for (const cost::ProfilePoint& q : p.points) {
    if (q.derived) return true;
  }
  return false;
}

// What a profile is of, for the notes: the knobs that change what is computed, or the workload.
std::string profiled_what(const Config& config) {
  const Config knobs = computation_knobs(config);
  return knobs.entries().empty() ? std::string("the workload") : knobs.to_string();
}

// The samples of one rank's micro-batch (the last, when they do not divide evenly: the largest).
int64_t micro_batch_per_rank(const cost::PredictInput& input) {
  const int64_t split = std::max<int64_t>(1, input.dp * input.micro_batches);
  return (input.batch + split - 1) / split;
}

// A space small enough to walk whole: no cut-point knob, at most cost::kMaxEnumerated points.
bool enumerable(const space::CompiledSpace& space) {
  if (!space.cut_knob().empty()) return false;
  try {
    return space.size() <= cost::kMaxEnumerated;
  } catch (const Error&) {
    return false;  // over 2^64
  }
}

// Calls f(config) for every configuration of `space` — with a cut-point knob, for every
// configuration of the other knobs (the cuts change no profile and no batch size, and may be
// 10^10 of them).
template <typename F>
void for_each_but_cuts(const space::CompiledSpace& space, F&& f) {
  if (space.cut_knob().empty()) {
    space.for_each([&](const space::PointView& p) { f(p.to_config()); });
  } else {
    space.for_each_cut_family([&](const Config& c, const space::StageSplits& splits) {
      if (splits.count() > 0) f(c);
      return true;
    });
  }
}

}  // namespace

WorkloadCostModel::WorkloadCostModel(Workload workload, db::Database* database,
                                     std::function<void(const std::string&)> on_note)
    : workload_(std::move(workload)),
      database_(database),
      on_note_(std::move(on_note)),
      fingerprint_(fingerprint_json(collect_system_info())) {
  batch_lo_ = std::max<int64_t>(1, workload_.batch_size / 2);
  batch_hi_ = workload_.batch_size;
  if (const std::optional<long long> available = available_memory_bytes())
    available_ = static_cast<double>(*available);
}

void WorkloadCostModel::set_ranks_per_trial(int ranks) {
  ranks_per_trial_ = ranks;
  mappings_.clear();
  space_runs_.reset();  // of the configurations the runs can run
  hold_to_machine();
}

void WorkloadCostModel::hold_to_machine() {
  machine_ranks_ = std::max(1, ranks_per_trial_);
  if (ranks_per_trial_ > 0 || space_ == nullptr) return;
  // Any world (a plan): the most ranks the layout knobs' domains can make, read off the knobs
  // rather than a walk of the space (a plan of stored profiles walks none of its 10^8 points).
  double most = 1;
  for (const char* name : {"tp", "pp", "dp"}) {
    double largest = 1;
    for (const space::KnobInfo& knob : space_->knobs()) {
      if (knob.name != name) continue;
      for (const Value& v : knob.domain)
        if (is_number(v)) largest = std::max(largest, as_number(v));
    }
    most *= largest;
  }
  machine_ranks_ = static_cast<int>(std::min(most, 1024.0));
}

double WorkloadCostModel::memory_budget_bytes() const {
  if (workload_.memory_budget > 0) return static_cast<double>(workload_.memory_budget);
  return available_ ? MachineMemory{*available_, machine_ranks_}.tensor_budget() : 0;
}

std::string WorkloadCostModel::memory_limit_note() const {
  if (workload_.memory_budget > 0 || !available_) return "";
  return MachineMemory{*available_, machine_ranks_}.describe();
}

WorkloadCostModel::~WorkloadCostModel() = default;

void WorkloadCostModel::use_batches_of(const space::CompiledSpace& space) {
  mappings_.clear();  // the profile keys name the batches
  space_runs_.reset();
  space_ = &space;
  for (const space::KnobInfo& knob : space.knobs()) {
    // The knob's domain (ascending), not the walk over the space: as good a range to profile, and
    // it costs nothing in a space of 10^10 configurations.
    if (knob.name != "batch_size" || knob.domain.empty() || !is_number(knob.domain.front()))
      continue;
    batch_lo_ = std::max<int64_t>(1, static_cast<int64_t>(as_number(knob.domain.front())));
    batch_hi_ = std::max<int64_t>(1, static_cast<int64_t>(as_number(knob.domain.back())));
  }
  if (batch_lo_ == batch_hi_) batch_lo_ = std::max<int64_t>(1, batch_hi_ / 2);
  hold_to_machine();
}

std::string WorkloadCostModel::profile_key(const Config& config, int world) const {
  return key_of(computation_knobs(config), world);
}

std::string WorkloadCostModel::family_key(const Config& config, int world) const {
  return key_of(outside_block_knobs(config), world);
}

std::string WorkloadCostModel::current_key(const std::string& stored_key) {
  nlohmann::ordered_json key = nlohmann::ordered_json::parse(stored_key, nullptr, false);
  if (!key.is_object() || !key.contains("knobs") || !key["knobs"].is_object()) return stored_key;
  const Config knobs = computation_knobs(Config::from_json(key["knobs"].dump(), "a profile key"));
  key["knobs"] = nlohmann::ordered_json::parse(knobs.canonical_json());
  return key.dump();
}

std::string WorkloadCostModel::key_of(const Config& knobs, int world) const {
  // The workload's part, once per world (a plan asks for every configuration's key).
  auto cached = workload_key_json_.find(world);
  if (cached == workload_key_json_.end()) {
    Workload w = workload_;
    w.batch_size = 0;  // predicted across
    w.memory_budget = 0;
    w.warmup = 0;
    w.steps = 0;
    w.threads = threads_per_rank(workload_, world);
    cached =
        workload_key_json_.emplace(world, nlohmann::ordered_json::parse(w.to_json()).dump()).first;
  }
  // {"workload":…,"knobs":…,"batches":[lo,hi],"ranks_beside":n}: what dump() writes of that
  // object, member by member (stored profiles are found by this text).
  return "{\"workload\":" + cached->second +
         ",\"knobs\":" + nlohmann::ordered_json::parse(knobs.canonical_json()).dump() +
         ",\"batches\":[" + std::to_string(batch_lo_) + "," + std::to_string(batch_hi_) +
         "],\"ranks_beside\":" + std::to_string(ranks_beside(world)) + "}";
}

double WorkloadCostModel::profile_space(const space::CompiledSpace& space) {
  const double before = profile_seconds_;
  if (space.cut_knob().empty()) {
    uint64_t size = UINT64_MAX;
    try {
      size = space.size();
    } catch (const Error&) {
    }
    if (size > cost::kMaxEnumerated) {
      if (on_note_) on_note_("the space is too large to profile up front: profiles as needed");
      return 0;
    }
  }
  for_each_but_cuts(space, [&](const Config& c) {
    const Mapping& m = mapping(c);
    if (!m.why_not.empty()) return;
    try {
      predictor_for(m, c);
    } catch (const Error&) {
      // A configuration whose key cannot be profiled is unpredictable; predict() says why.
    }
  });
  return profile_seconds_ - before;
}

cost::Profile WorkloadCostModel::measure_profile(const Config& config, const std::string& key,
                                                 std::string* how_made) {
  const Mapping& m = mapping(config);
  const int ranks = ranks_beside(m.world());
  const std::vector<std::string> worker = {self_executable(), "worker"};
  if (std::optional<cost::Profile> swapped = derive_across_optimizer(config, how_made)) {
    swapped->key_json = key;
    swapped->fingerprint_json = fingerprint_;
    swapped->code_revision = kMeasuringRevision;
    return std::move(*swapped);
  }
  if (!bases_.count(m.family)) {
    if (std::optional<cost::Profile> shifted = derive_across_head(config, key, how_made)) {
      // A composed profile is the shift of another key's: it is of this key, measured here now.
      shifted->key_json = key;
      shifted->fingerprint_json = fingerprint_;
      shifted->code_revision = kMeasuringRevision;
      return std::move(*shifted);
    }
  }
  ProfileRequest request = request_of(computation_knobs(config), m);
  request.batches_taken = space_runs().batches;
  request.gpipe_step = space_runs().gpipe_micro_batches;
  request.checkpointed_step = space_runs().checkpoints;
  std::vector<std::string> sibling_keys;
  if (auto base = bases_.find(m.family); base != bases_.end()) {
    if (how_made)
      *how_made =
          "derived from a profile that differs only inside the blocks: one block of each measured "
          "alone";
    request.base = base->second.profile;
    request.base_knobs = base->second.knobs;
    for (const auto& [sibling_key, knobs] : unprofiled_siblings(m)) {
      sibling_keys.push_back(sibling_key);
      request.siblings.push_back(knobs);
    }
  }
  // Under a memory budget the space's largest batches often fit in no configuration: profiled
  // first up to the middle batch, and then at the largest micro-batch any configuration of the
  // family is predicted to fit, if that is larger (a derived key takes its base's batches).
  const bool capped = !request.base && capped_batch() > 0;
  if (capped) request.batch_hi = capped_batch();
  // A job of the collectives' ranks times them too when they are still to be measured (every
  // configuration of several ranks needs them): one launch, not two.
  request.collectives = ranks == kCollectiveRanks && !load_stored_collectives();
  cost::CollectiveProfile measured_collectives;
  std::vector<cost::Profile> profiles =
      measure_profiles_beside_peers(request, ranks, worker, &measured_collectives);
  if (request.collectives) {
    adopt_collectives(std::move(measured_collectives), " (in the same job as the profile below)");
    request.collectives = false;
  }
  cost::Profile profile = std::move(profiles.front());
  int64_t measured_to = 0;  // the largest batch of its deep steps
  for (const PeakAt& p : plain_deep_peaks(profile)) measured_to = std::max(measured_to, p.batch);
  if (!request.base && how_made && measured_to < std::max<int64_t>(request.batch_hi, 3)) {
    // Its steps stopped short of this machine's memory (runners/profiler.h): said, as the batches
    // past them are predicted from the line through the largest two.
    *how_made = "its steps measured up to " + std::to_string(measured_to) + " samples, not " +
                std::to_string(request.batch_hi) + ": this machine's memory holds no more";
  }
  // The siblings' profiles, stored now (a run stopped before it predicts them loses nothing) and
  // kept for predictor_for.
  for (size_t i = 0; i < sibling_keys.size() && i + 1 < profiles.size(); ++i) {
    cost::Profile& sibling = profiles[i + 1];
    sibling.key_json = sibling_keys[i];
    sibling.fingerprint_json = fingerprint_;
    sibling.code_revision = kMeasuringRevision;
    profile_seconds_ += sibling.profile_s;
    if (database_) database_->put_profile(sibling_keys[i], sibling.to_json());
    if (on_note_) {
      on_note_("profiled " + profiled_what(request.siblings[i]) + " in " +
               seconds_text(sibling.profile_s) +
               " (derived from a profile that differs only inside the blocks: its block "
               "probed beside " +
               profiled_what(config) + "'s)");
    }
    measured_ahead_.emplace(sibling_keys[i], std::move(sibling));
  }
  if (capped) {
    // Also where it stopped short of the batch it was capped at: a step this machine's budget
    // holds (below its ceiling) can still lie between.
    const int64_t fits = largest_fitting_micro_batch(profile, m);
    if (fits > measured_to) {
      request.extend = profile;
      request.batch_hi = std::min(fits, batch_hi_);
      const double first_s = profile.profile_s;
      profile = std::move(measure_profiles_beside_peers(request, ranks, worker).front());
      profile.profile_s += first_s;
    }
  }
  profile.key_json = key;
  profile.fingerprint_json = fingerprint_;
  profile.code_revision = kMeasuringRevision;
  return profile;
}

ProfileRequest WorkloadCostModel::request_of(const Config& knobs, const Mapping& of) const {
  ProfileRequest request;
  request.workload = workload_;
  request.workload.threads = threads_per_rank(workload_, of.world());
  request.knobs = knobs;
  request.batch_lo = batch_lo_;
  request.batch_hi = batch_hi_;
  return request;
}

void WorkloadCostModel::complete_profile(cost::Profile& profile, const Config& config,
                                         const std::string& key) {
  const Missing missing = missing_steps(profile);
  if (!missing.gpipe && !missing.checkpointed) return;
  SLAPO_CHECK(!replaying_, ErrorCode::kNotFound, "replaying: the recording's profile of ",
              profiled_what(config), " lacks ", missing.what());
  const Mapping& m = mapping(config);
  double seconds = 0;
  auto extend = [&](ProfileRequest request) {
    request.extend = profile;
    cost::Profile extended =
        std::move(measure_profiles_beside_peers(request, ranks_beside(m.world()),
                                                {self_executable(), "worker"})
                      .front());
    seconds += extended.profile_s;
    profile.points = std::move(extended.points);
    profile.block_bytes = extended.block_bytes;  // the checkpointed block's, with its step
  };
  if (missing.gpipe) {
    ProfileRequest request = request_of(computation_knobs(config), m);
    request.extend_gpipe_step = true;
    extend(std::move(request));
  }
  if (missing.checkpointed) {
    ProfileRequest request = request_of(computation_knobs(config), m);
    if (const int64_t cap = capped_batch(); cap > 0) request.batch_hi = cap;  // as first measured
    request.extend_checkpointed_step = true;
    extend(std::move(request));
  }
  profile.profile_s += seconds;
  profile_seconds_ += seconds;
  if (database_) database_->put_profile(key, profile.to_json());
  if (on_note_) {
    on_note_("added " + missing.what() + " to the profile of " + profiled_what(config) + " in " +
             seconds_text(seconds));
  }
}

int64_t WorkloadCostModel::capped_batch() {
  if (memory_budget_bytes() <= 0 || space_ == nullptr || !enumerable(*space_)) return 0;
  const int64_t middle = static_cast<int64_t>(
      std::llround(std::sqrt(static_cast<double>(batch_lo_) * static_cast<double>(batch_hi_))));
  const int64_t cap = cost::taken_at_most(middle, 2 * batch_lo_, space_runs().batches);
  return cap >= 2 * batch_lo_ && cap < batch_hi_ ? cap : 0;
}

const WorkloadCostModel::SpaceRuns& WorkloadCostModel::space_runs() {
  if (space_runs_) return *space_runs_;
  std::set<int64_t> taken;
  SpaceRuns runs;
  if (space_ != nullptr && enumerable(*space_)) {
    runs.gpipe_micro_batches = runs.checkpoints = false;
    space_->for_each([&](const space::PointView& point) {
      const Mapping& m = mapping(point.to_config());
      if (!m.why_not.empty()) return true;
      taken.insert(micro_batch_per_rank(m.input));
      runs.gpipe_micro_batches =
          runs.gpipe_micro_batches || (m.input.gpipe && m.input.micro_batches > 1);
      runs.checkpoints = runs.checkpoints || m.input.ckpt_blocks > 0;
      return true;
    });
  } else if (space_ != nullptr) {
    for (const space::KnobInfo& knob : space_->knobs()) {
      if (knob.name != "batch_size") continue;
      for (const Value& v : knob.domain) {
        if (is_number(v)) taken.insert(static_cast<int64_t>(as_number(v)));
      }
    }
  }
  runs.batches.assign(taken.begin(), taken.end());
  space_runs_.emplace(std::move(runs));
  return *space_runs_;
}

cost::Profile WorkloadCostModel::probe_across_head(const Base& base, const Config& knobs,
                                                   const Mapping& of) {
  ProfileRequest request = request_of(knobs, of);
  request.base = base.profile;
  request.base_knobs = base.knobs;
  request.head = true;
  const int ranks = ranks_beside(of.world());
  const std::vector<std::string> worker = {self_executable(), "worker"};
  cost::Profile probed = std::move(measure_profiles_beside_peers(request, ranks, worker).front());
  // The deep variant's steps with the new head, measured as a profile of its own measures them —
  // at the two largest batches the base's were, in one sweep, and then, only where the new head
  // lets batches fit beyond twice the base's largest, there alone (measure_profile) —: what a
  // head saves in time grows with the blocks before it, and the peak's difference need not stay
  // on the line through the one-block batches (cost/head_difference.h). Below them the time's
  // difference runs to the head's at no sample (its optimizer step's), where what it saves is
  // least: on table 5 the fused head's difference on six blocks was −18 and −85 ms at 18 and 40
  // samples, +4 and −5 (the noise) at 4 and 8, and its timed steps at 1, 4 and 8 add to 0.6 s. Up
  // to twice the largest measured batch, a step is extrapolated along the last segment as in any
  // profile: on table 5 the fused head fits 80 samples where the base's largest is 40, and its
  // step there cost 2 s of the profile's 9.7. Of the model's own depth only (at most 8 blocks):
  // else none.
  std::set<int64_t> base_batches;
  for (const cost::ProfilePoint& q : base.profile.points) {
    if (q.layers == base.profile.layers && q.layers > 1 && q.ckpt_blocks == 0 &&
        q.micro_batches == 1 && q.batch > 1)
      base_batches.insert(q.batch);
  }
  if (base_batches.empty()) return probed;
  const std::vector<int64_t> swept(
      std::prev(base_batches.end(), std::min<std::ptrdiff_t>(2, base_batches.size())),
      base_batches.end());  // the two largest, ascending
  const int64_t swept_to = swept.back();
  auto deep_steps = [&](const cost::Profile& to, std::vector<int64_t> batches) {
    ProfileRequest extend = request;
    extend.base.reset();
    extend.head = false;
    extend.extend = to;
    extend.extend_batches = std::move(batches);
    cost::Profile with = std::move(measure_profiles_beside_peers(extend, ranks, worker).front());
    with.profile_s += to.profile_s;  // the probe's and every sweep's
    return with;
  };
  // `to` with the base shifted by every difference its measured steps show, those steps in place
  // of the base's deep steps without checkpointing at their batches (at the others, the base's
  // shifted).
  auto shifted = [&](const cost::Profile& to) {
    cost::Profile out = cost::shift_head(base.profile, cost::head_differences(base.profile, to),
                                         cost::outside_params_more(to.shape, base.profile.shape));
    std::set<int64_t> measured;
    for (const cost::ProfilePoint& q : to.points) {
      if (!q.derived && q.layers > 1 && q.ckpt_blocks == 0 && q.micro_batches == 1)
        measured.insert(q.batch);
    }
    auto replaced = [&](const cost::ProfilePoint& q) {
      return q.layers > 1 && q.ckpt_blocks == 0 && q.micro_batches == 1 && measured.count(q.batch);
    };
    out.points.erase(std::remove_if(out.points.begin(), out.points.end(), replaced),
                     out.points.end());
    for (const cost::ProfilePoint& q : to.points) {
      if (!q.derived && replaced(q)) out.points.push_back(q);
    }
    return out;
  };
  cost::Profile measured = deep_steps(probed, swept);
  cost::Profile out = shifted(measured);
  if (capped_batch() > 0) {
    const int64_t fits = std::min(largest_fitting_micro_batch(out, of), batch_hi_);
    if (fits > 2 * swept_to) {
      measured = deep_steps(measured, {fits});
      out = shifted(measured);
    }
  }
  out.profile_s = measured.profile_s;
  return out;
}

std::optional<cost::Profile> WorkloadCostModel::derive_across_optimizer(const Config& config,
                                                                        std::string* how_made) {
  const Value* fused = computation_knobs(config).find("fused_adamw");
  if (fused == nullptr || !std::holds_alternative<bool>(*fused) || !std::get<bool>(*fused))
    return std::nullopt;
  Config twin = config;
  twin.set("fused_adamw", Value(false));
  const Mapping& t = mapping(twin);
  if (!t.why_not.empty()) return std::nullopt;
  const cost::Profile& from = predictor_for(t, twin).profile();
  const Mapping& m = mapping(config);
  ProfileRequest request = request_of(computation_knobs(config), m);
  request.base = from;
  request.base_knobs = computation_knobs(twin);
  request.optimizer = true;
  cost::Profile out = std::move(
      measure_profiles_beside_peers(request, ranks_beside(m.world()), {self_executable(), "worker"})
          .front());
  if (how_made) {
    *how_made = "derived from " + profiled_what(twin) +
                "'s profile: its steps that peaked in the optimizer's step run again, the two "
                "optimizers timed within the deep variant's steps";
  }
  return out;
}

std::optional<cost::Profile> WorkloadCostModel::derive_across_head(const Config& config,
                                                                   const std::string& key,
                                                                   std::string* how_made) {
  const Mapping& m = mapping(config);
  auto pair = head_pairs_.find(m.family);
  if (pair == head_pairs_.end()) {
    // A measured base whose key differs from this family's only in the head: its blocks with this
    // key's head are probed against it, or read when stored.
    // (Its family is this key's with the base's head, on as many ranks: a profile of one rank
    // alone is not a base for one beside a peer.)
    const Config own = computation_knobs(config);
    const Base* base = nullptr;
    for (const auto& [family, b] : bases_) {
      if (family_key(with_ends_of(own, b.knobs), m.world()) == family) base = &b;
    }
    if (base == nullptr) return std::nullopt;
    const Config knobs = with_ends_of(base->knobs, own);
    const std::string to_key = key_of(knobs, m.world());
    std::string not_reused;
    std::optional<cost::Profile> to = reusable_profile(to_key, &not_reused);
    if (!to) {
      to = probe_across_head(*base, knobs, m);
      to->key_json = to_key;
      to->fingerprint_json = fingerprint_;
      to->code_revision = kMeasuringRevision;
      const std::string how =
          "derived from a profile that differs only in the head or the embedding's split: its "
          "one-block steps measured where the base's were, its deep ones at the base's two "
          "largest batches";
      if (to_key == key) {  // predictor_for counts, stores and notes it
        if (how_made) *how_made = how;
        head_pairs_.emplace(m.family, HeadPair{base->profile, *to, base->knobs});
        return to;
      }
      profile_seconds_ += to->profile_s;
      if (database_) database_->put_profile(to_key, to->to_json());
      if (on_note_) {
        on_note_("profiled " + profiled_what(knobs) + " in " + seconds_text(to->profile_s) + " (" +
                 how + ")");
      }
      measured_ahead_.emplace(to_key, *to);
    }
    pair = head_pairs_.emplace(m.family, HeadPair{base->profile, *to, base->knobs}).first;
  }
  // This key's blocks with the pair's first head: a key of a family with a base, its profile
  // measured, derived or stored; shifted by the pair's difference, nothing measured.
  const Config other = with_ends_of(config, pair->second.from_knobs);
  const Mapping& o = mapping(other);
  if (!o.why_not.empty() || o.input.tp != m.input.tp) return std::nullopt;
  const cost::Profile& from_side = predictor_for(o, other).profile();
  const HeadPair& p = pair->second;
  cost::Profile out = cost::shift_head(from_side, cost::head_differences(p.from, p.to),
                                       cost::outside_params_more(p.to.shape, p.from.shape));
  out.profile_s = 0;
  if (how_made) {
    *how_made = "composed: " + profiled_what(other) +
                "'s profile shifted by the head's difference, nothing measured";
  }
  return out;
}

std::vector<std::pair<std::string, Config>> WorkloadCostModel::unprofiled_siblings(
    const Mapping& of) {
  std::vector<std::pair<std::string, Config>> out;
  // A space too large to walk is profiled as predicted; one with a cut-point knob is walked
  // without its cuts (which change no key), as profile_space walks it.
  if (space_ == nullptr || (space_->cut_knob().empty() && !enumerable(*space_))) return out;
  std::set<std::string> seen = {of.key};
  for_each_but_cuts(*space_, [&](const Config& config) {
    const Mapping& m = mapping(config);
    if (!m.why_not.empty() || m.family != of.family) return;
    if (!seen.insert(m.key).second || predictors_.count(m.key) || measured_ahead_.count(m.key))
      return;
    std::string not_reused;
    if (reusable_profile(m.key, &not_reused)) return;
    out.emplace_back(m.key, computation_knobs(config));
  });
  return out;
}

int64_t WorkloadCostModel::largest_fitting_micro_batch(const cost::Profile& profile,
                                                       const Mapping& of) {
  std::optional<cost::CollectiveModel> comm;
  if (of.world() > 1) comm = collectives();
  const cost::Predictor predictor(profile, comm);
  // No margin: a configuration just over the budget is predicted out of memory, its time is not
  // ranked (the time beyond the profiled batches is extrapolated linearly, should one fit).
  const double budget = memory_budget_bytes();
  int64_t largest = 0;
  space_->for_each([&](const space::PointView& point) {
    const Mapping& m = mapping(point.to_config());
    if (!m.why_not.empty() || m.family != of.family || m.input.tp != of.input.tp) return true;
    try {
      if (predictor.predict(m.input).peak_bytes > budget) return true;
    } catch (const Error&) {
      return true;  // a layout the predictor cannot compose: predict() says why later
    }
    largest = std::max(largest, micro_batch_per_rank(m.input));
    return true;
  });
  // The extension steps the deep variant without checkpointing: where only checkpointed
  // configurations fit, that step may need more than this machine has (gpt-mini at sequence 128,
  // 512 samples: 16.4 GB of tensors with 23 GB available, 44 s of page faults, a step from the
  // profile's ceiling). Not past the largest batch whose step its deep peaks so far expect within
  // this machine's budget (runners/machine_memory.h, whatever the space's budget).
  if (available_ && largest > 0) {
    const double machine = MachineMemory{*available_, ranks_beside(of.world())}.tensor_budget();
    const std::vector<PeakAt> peaks = plain_deep_peaks(profile);
    int64_t within = 0;
    for (int64_t batch : space_runs().batches) {
      if (batch <= largest && expected_peak(peaks, batch) <= machine) within = batch;
    }
    largest = std::min(largest, within);
  }
  return largest;
}

std::optional<cost::Profile> WorkloadCostModel::reusable_profile(const std::string& key,
                                                                 std::string* not_reused) {
  if (!database_ || reprofile_) return std::nullopt;
  const std::optional<std::string> stored = database_->profile(key);
  if (!stored) return std::nullopt;
  try {
    cost::Profile p = cost::Profile::from_json(*stored, "the stored profile");
    const std::string stale = why_stale(p.fingerprint_json, p.code_revision);
    if (!stale.empty()) {
      *not_reused = "a stored profile " + stale;
      return std::nullopt;
    }
    // A derived profile is not completed by a step of its own key measured alone: against its
    // composed steps that step is noise (a measured checkpointed step ran faster than the composed
    // plain one, and the recompute came out as none). It is derived again from its base, completed.
    const Missing missing = missing_steps(p);
    if (is_derived(p) && (missing.gpipe || missing.checkpointed)) {
      *not_reused = "a stored profile derived without " + missing.what() + " this space reads";
      return std::nullopt;
    }
    return p;
  } catch (const Error& e) {
    *not_reused = e.what();
  }
  return std::nullopt;
}

WorkloadCostModel::Missing WorkloadCostModel::missing_steps(const cost::Profile& profile) {
  Missing out;
  if (cost::has_gpipe_step(profile) && cost::has_checkpointed_step(profile)) return out;
  const SpaceRuns& runs = space_runs();
  out.gpipe = runs.gpipe_micro_batches && !cost::has_gpipe_step(profile);
  out.checkpointed = runs.checkpoints && !cost::has_checkpointed_step(profile);
  return out;
}

std::string WorkloadCostModel::Missing::what() const {
  if (gpipe && checkpointed) return "the GPipe and the checkpointed steps";
  return gpipe ? "the GPipe step" : checkpointed ? "the checkpointed step" : "nothing";
}

std::string WorkloadCostModel::why_stale(const std::string& fingerprint,
                                         const std::string& revision) const {
  if (replaying_) return "";
  if (const std::string machine = machine_difference(fingerprint, fingerprint_); !machine.empty())
    return "is of another machine (" + machine + ")";
  if (revision != kMeasuringRevision)
    return "is of another revision of slapo's measuring code (" + revision + ", not " +
           kMeasuringRevision + ")";
  return "";
}

bool WorkloadCostModel::load_stored_collectives() {
  if (collectives_) return true;
  if (!database_ || reprofile_) return false;
  const std::optional<std::string> stored = database_->profile(collectives_key());
  if (!stored) return false;
  cost::CollectiveProfile p =
      cost::CollectiveProfile::from_json(*stored, "the stored collective profile");
  const std::string stale = why_stale(p.fingerprint_json, p.code_revision);
  if (!stale.empty()) {
    if (on_note_) on_note_("the stored collective profile " + stale + ": profiling again");
    return false;
  }
  if (on_note_) on_note_("collective profile reused");
  collectives_.emplace(p);
  return true;
}

void WorkloadCostModel::adopt_collectives(cost::CollectiveProfile profile, const char* how) {
  profile.fingerprint_json = fingerprint_;
  profile.code_revision = kMeasuringRevision;
  profile_seconds_ += profile.profile_s;
  if (database_) database_->put_profile(collectives_key(), profile.to_json());
  if (on_note_) {
    on_note_("profiled the collectives of " + std::to_string(kCollectiveRanks) + " ranks in " +
             seconds_text(profile.profile_s) + how);
  }
  collectives_.emplace(profile);
}

const cost::CollectiveModel& WorkloadCostModel::collectives() {
  if (load_stored_collectives()) return *collectives_;
  SLAPO_CHECK(!replaying_, ErrorCode::kNotFound,
              "replaying: the recording holds no profile of the collectives");
  adopt_collectives(
      profile_collectives(kCollectiveRanks, {self_executable(), "worker", "--collectives"}), "");
  return *collectives_;
}

cost::Predictor& WorkloadCostModel::predictor_for(const Mapping& m, const Config& config) {
  const std::string& key = m.key;
  // A layout of several ranks needs the machine's collectives (a key may serve one rank too).
  const bool ranks = m.world() > 1;
  auto it = predictors_.find(key);
  if (it != predictors_.end()) {
    if (ranks && !it->second->has_collectives()) it->second->set_collectives(collectives());
    return *it->second;
  }
  std::optional<cost::Profile> profile;
  auto ahead = measured_ahead_.find(key);
  if (ahead != measured_ahead_.end()) {  // its seconds and its note were counted when measured
    profile = std::move(ahead->second);
    measured_ahead_.erase(ahead);
  }
  if (!profile) {
    std::string not_reused;
    profile = reusable_profile(key, &not_reused);
    if (profile && on_note_) on_note_("profile reused for " + profiled_what(config));
    if (!not_reused.empty() && on_note_) on_note_(not_reused + ": profiling again");
    // Measured for a space without GPipe micro-batches or checkpointing, reused by one with them:
    // the step it lacks alone is measured now (before it is a base: the keys derived from it are
    // derived again, with the step).
    if (profile) complete_profile(*profile, config, key);
  }
  if (!profile) {
    SLAPO_CHECK(!replaying_, ErrorCode::kNotFound, "replaying: the recording holds no profile of ",
                profiled_what(config));
    // A key whose profile failed is not measured again for each of its configurations (a plan of
    // 18 retried one that ran out of this machine's memory 18 times, 94 s).
    if (auto failed = unprofilable_.find(key); failed != unprofilable_.end())
      SLAPO_FAIL(ErrorCode::kRuntime, failed->second);
    // Said before the first one starts: nothing else prints while a profile measures (53 s for
    // gpt-mini at sequence 128 up to 256 samples), and the first trial, or the plan, waits.
    if (on_note_ && !announced_) {
      on_note_("profiling " + profiled_what(config) +
               " first (no stored profile of this machine and revision; SLAPO_PROFILE_TRACE=1 "
               "prints each step it measures)");
      announced_ = true;
    }
    std::string how_made;
    try {
      profile = measure_profile(config, key, &how_made);
    } catch (const Error& e) {
      unprofilable_.emplace(key, e.what());
      throw;
    }
    profile_seconds_ += profile->profile_s;
    if (database_) database_->put_profile(key, profile->to_json());
    if (on_note_) {
      on_note_("profiled " + profiled_what(config) + " in " + seconds_text(profile->profile_s) +
               (how_made.empty() ? "" : " (" + how_made + ")"));
    }
  }
  // A measured profile is the base of the keys that differ only inside the blocks (the family
  // names the tp and the splits).
  if (!is_derived(*profile)) bases_.emplace(m.family, Base{*profile, computation_knobs(config)});
  std::optional<cost::CollectiveModel> comm;
  if (ranks) comm = collectives();
  auto predictor = std::make_unique<cost::Predictor>(std::move(*profile), std::move(comm));
  const std::string& family = m.family;
  family_of_[key] = family;
  auto scale = family_memory_scale_.find(family);
  if (scale != family_memory_scale_.end()) predictor->raise_memory_scale(scale->second);
  return *predictors_.emplace(key, std::move(predictor)).first->second;
}

WorkloadCostModel::Mapping WorkloadCostModel::mapping(const Config& config) {
  const std::string canonical = config.canonical_json();
  auto it = mappings_.find(canonical);
  if (it != mappings_.end()) return it->second;
  Mapping m;
  try {
    // With the run's ranks known, a configuration that names no dp fills them with data
    // parallelism, as its trial will (models/templates.h).
    std::optional<models::TemplateConfig> parsed;
    try {
      parsed = models::parse_template_config(workload_.schedule_template(), workload_.spec(),
                                             config, ranks_per_trial_);
      if (ranks_per_trial_ > 0) parsed->parallel.layout.check_world(ranks_per_trial_);
    } catch (const Error&) {
      m.invalid = true;  // what its trial would say too
      throw;
    }
    const models::TemplateConfig& tc = *parsed;
    const models::ParallelKnobs& p = tc.parallel;
    m.key = profile_key(config, p.world());
    m.family = family_key(config, p.world());
    m.input.batch = workload_.batch_size_for(config);
    m.input.ckpt_blocks = tc.checkpointed_blocks;
    m.input.micro_batches = p.micro_batches;
    m.input.tp = p.layout.tp;
    m.input.pp = p.layout.pp;
    m.input.dp = p.layout.dp;
    m.input.gpipe = p.pipeline_schedule == "gpipe";
    m.input.cuts = p.cuts;
    // What its trial's step refuses, in the same words (models::batch_split_error): a batch the
    // data-parallel ranks, or a rank's the micro-batches, do not split evenly. Predicted, such a
    // configuration was proposed first wherever it lay at the memory budget's edge (10 of 15
    // trials invalid on a space of every batch up to 2,048).
    if (std::string uneven =
            models::batch_split_error(m.input.batch, m.input.dp, m.input.micro_batches);
        !uneven.empty()) {
      m.invalid = true;
      SLAPO_FAIL(ErrorCode::kInvalidArgument, uneven);
    }
    // The throughputs a trial reports besides samples/s, counted as runners/workload.cc does.
    const int64_t seq = workload_.seq_len_for(config);
    m.input.tokens_per_sample = static_cast<double>(seq);
    m.input.flops_per_sample = workload_.spec().train_flops(seq);
  } catch (const Error& e) {
    m.why_not = e.what();
  }
  if (mappings_.size() >= kMaxCachedMappings) return m;
  return mappings_.emplace(canonical, std::move(m)).first->second;
}

std::string WorkloadCostModel::computation(const Config& config) {
  const Mapping& m = mapping(config);
  if (!m.why_not.empty()) return "";
  const cost::PredictInput& in = m.input;
  // One micro-batch runs each stage's forward, then its backward, under either schedule
  // (schedule/runtime/pipeline.cc: 1F1B's warm-up forward is GPipe's).
  const bool gpipe = in.gpipe && in.micro_batches > 1;
  const nlohmann::json j = {{"key", m.key},
                            {"batch", in.batch},
                            {"ckpt_blocks", in.ckpt_blocks},
                            {"micro_batches", in.micro_batches},
                            {"tp", in.tp},
                            {"pp", in.pp},
                            {"dp", in.dp},
                            {"gpipe", gpipe},
                            {"cuts", in.cuts}};
  return j.dump();
}

cost::Predicted WorkloadCostModel::predict(const Config& config) {
  cost::Predicted out;
  const cost::Composable c = compose(config);
  if (!c.predictor) {
    out.why_not = c.why_not;
    out.invalid = c.invalid;
    return out;
  }
  try {
    out.prediction = c.predictor->predict(c.input);
    out.time_calibrated = c.predictor->time_calibrated();
  } catch (const Error& e) {
    out.why_not = e.what();
  }
  return out;
}

cost::Composable WorkloadCostModel::compose(const Config& config) {
  cost::Composable out;
  const Mapping& m = mapping(config);
  if (!m.why_not.empty()) {
    out.why_not = m.why_not;
    out.invalid = m.invalid;
    return out;
  }
  try {
    out.predictor = &predictor_for(m, config);
    out.input = m.input;
  } catch (const Error& e) {
    out.why_not = e.what();
  }
  return out;
}

void WorkloadCostModel::calibrate(const Config& config, const TrialResult& result) {
  const Mapping& m = mapping(config);
  if (!m.why_not.empty()) return;
  try {
    cost::Predictor& predictor = predictor_for(m, config);
    if (result.status == TrialStatus::kOk && result.metrics.count(metric::kStepMsMedian) &&
        result.metrics.count(metric::kPeakBytes)) {
      predictor.calibrate(m.input, result.metrics.at(metric::kStepMsMedian),
                          result.metrics.at(metric::kPeakBytes));
    } else if (result.status == TrialStatus::kOom && workload_.memory_budget > 0) {
      predictor.calibrate_oom(m.input, static_cast<double>(workload_.memory_budget));
    }
    share_memory_scale(m.family, predictor.memory_scale());
  } catch (const Error&) {
    // A measurement the model cannot learn from (its key cannot be profiled or composed) leaves
    // the model as it is: the tuning run goes on, and predict() says why for that key.
  }
}

void WorkloadCostModel::share_memory_scale(const std::string& family, double scale) {
  double& shared = family_memory_scale_[family];
  shared = std::max(shared, scale);
  for (auto& [key, predictor] : predictors_) {
    auto of = family_of_.find(key);
    if (of != family_of_.end() && of->second == family) predictor->raise_memory_scale(shared);
  }
}

}  // namespace slapo::runners
