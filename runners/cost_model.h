#pragma once
// The cost model of a built-in workload: its profiles — read from the tuning database, or measured
// now by a short profiling run and stored there — and the mapping from a configuration to a
// prediction (cost/predictor.h).
//
// A profile is keyed by what the measurements depend on: the workload without its batch size and
// limits, the knobs that change the computation (attention, fusions, decompose, sequence length,
// tp) and the threads of one rank. Batch size, checkpointing, micro-batches, pp, dp, the pipeline
// schedule and the cuts are what the model predicts across. Layouts of more than one rank also
// need the machine's collectives, profiled once by a job of two ranks
// (runners/collective_profile.h) and stored beside the profiles. A stored profile from another
// machine or another revision of slapo is not reused: it is measured again, and `on_note` says so.
//
// A key that differs from a profiled one only inside the blocks (the attention variant, the MLP's
// fusions; the same tp and splits) is derived from that one (cost/derived_profile.h): one block
// of it is probed beside one of the base (runners/block_probe.h; under tensor parallelism one
// rank's block on a simulated group) — with every other such key of the space at once, the base's
// block run once per round for all of them.
//
// A key that differs from a profiled one only in the model's ends — the head (fused_lm_loss) or,
// under tensor parallelism, how the embedding and the LM head tied to it are split (embed_shard) —
// is that one shifted by what the ends differ by, collectives included (cost/head_difference.h),
// read off the key's own one-block steps where the base's ran (runners/profiler.h; a split's
// checkpointed deep step too) and its deep steps at the base's two largest batches, once; the
// family's other keys are their attention variants' profiles shifted alike, nothing of them run.
//
// Profiling one key: runners/profiler.h.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/collectives.h"
#include "cost/planner.h"
#include "cost/predictor.h"
#include "db/database.h"
#include "runners/profiler.h"
#include "runners/workload.h"
#include "space/compiled_space.h"
#include "tuner/cost_model.h"

namespace slapo::runners {

// The tuner's cost model (tuner/cost_model.h) of a built-in workload.
class WorkloadCostModel : public tuner::CostModel {
 public:
  // `database` may be null (profiles are then measured and kept in memory only). `on_note` receives
  // one line per profile measured or reused (may be empty).
  WorkloadCostModel(Workload workload, db::Database* database,
                    std::function<void(const std::string&)> on_note = {});
  ~WorkloadCostModel() override;

  // The batch sizes to profile at: the smallest and the largest of the batch_size knob's domain
  // (half the workload's and the workload's when the space has no batch_size knob); under a
  // memory budget, only up to the largest the space's configurations are predicted to fit.
  // REQUIRES: `space` outlives the model.
  void use_batches_of(const space::CompiledSpace& space);
  // Measures (or loads) the profile of every key the space's configurations need, up front (a
  // space of more than cost::kMaxEnumerated configurations without a cut knob: none, each is
  // profiled when first predicted); returns the seconds spent profiling now.
  double profile_space(const space::CompiledSpace& space);
  // Re-measures every profile this model uses even when one is stored.
  void set_reprofile(bool reprofile) { reprofile_ = reprofile; }
  // Reuses stored profiles whatever machine and revision measured them: a recording replayed as
  // it was (benchmark/tuner_efficiency.cc), never a tuning run.
  void set_replaying(bool replaying) {
    replaying_ = replaying;
    if (replaying) set_available_memory(std::nullopt);  // the recording's machine is not this one
  }
  // The ranks each trial of the run has (0: any, as a plan): a configuration that names no dp
  // fills them with data parallelism, as its trial does; one of another world is not predicted —
  // its trial could not run it ("needs 1 ranks; this run has 2") — and its key is not profiled.
  void set_ranks_per_trial(int ranks);
  // A stored profile's key as this revision writes it: its knobs only those that change the
  // computation (a recording's keys, from before tp = 1 and the split knobs at tp = 1 were left
  // out, name them); any other key (the collectives') as it is.
  static std::string current_key(const std::string& stored_key);

  // The prediction of `config`, profiling its key first when needed; or why there is none (a
  // layout of more than one rank, a template knob the model does not cover, a configuration the
  // template refuses).
  cost::Predicted predict(const Config& config) override;
  cost::ConfigPredictor as_function() {
    return [this](const Config& c) { return predict(c); };
  }
  // For the planner's cut-point search: the predictor and input of `config` (its cuts, if any,
  // are the search's to choose).
  cost::Composable compose(const Config& config);
  cost::ConfigComposer composer() override {
    return [this](const Config& c) { return compose(c); };
  }
  // A measured trial of `config` (ok: its step time and peak; oom: over the workload's budget).
  // Its key's predictor is calibrated, and the keys of its family take its memory factor — those
  // profiled later too. Time is not shared between keys: a trial of one attention variant that
  // rescaled the others as well ended the search sooner on the recorded tables whose variants lie
  // within the noise of each other (table 1: the optimum at the 4th trial, then never; table 5:
  // 99.2% of it, then 97.6%; docs/benchmarks.md).
  void calibrate(const Config& config, const TrialResult& result);
  void observe(const Config& config, const TrialResult& result) override {
    calibrate(config, result);
  }
  // What predictions are held to: the space's memory budget, or where it sets none, this
  // machine's memory for each rank of a trial (runners/machine_memory.h: the profile measures up
  // to it, and the tuner and `plan` leave out what is predicted over it). 0: nothing.
  double memory_budget_bytes() const override;
  // Where it is this machine's memory, what it is ("this machine's memory (… of tensors a rank:
  // … available, 1 rank)"); empty where it is the space's budget or nothing.
  std::string memory_limit_note() const override;
  // The machine's available memory as the model holds predictions to it where the space sets no
  // budget: read when the model is made; nullopt holds them to nothing (a replay of a recording
  // made elsewhere). Tests set it.
  void set_available_memory(std::optional<double> bytes) {
    available_ = bytes;
    hold_to_machine();
  }
  // Its profile key and what the predictor is given (batch, checkpointed blocks, micro-batches,
  // layout, schedule, cuts): the knobs outside both change nothing. Empty when not predictable.
  std::string computation(const Config& config) override;

  double profile_seconds() const { return profile_seconds_; }
  const Workload& workload() const { return workload_; }

 private:
  // What a configuration means to the model, worked out once (the model strategy predicts the
  // whole space after every trial): its profile key and input, or why it cannot be predicted.
  struct Mapping {
    std::string key;     // the profile's (canonical JSON)
    std::string family;  // the key without the knobs that change only the blocks
    cost::PredictInput input;
    int world() const { return static_cast<int>(input.tp * input.pp * input.dp); }
    std::string why_not;
    bool invalid = false;  // why_not is the template's or the run's ranks': no trial runs it
  };
  // The profile key of `config` on `world` ranks, and its family: the keys that differ from it
  // only inside the blocks (a profile of one of them is the others' base).
  std::string profile_key(const Config& config, int world) const;
  std::string family_key(const Config& config, int world) const;
  std::string key_of(const Config& knobs, int world) const;
  // By value: the cache keeps at most kMaxCachedMappings (a plan may enumerate 10^8
  // configurations, each mapped once or twice; the model strategy ranks up to 100,000 after every
  // trial, each mapped again).
  Mapping mapping(const Config& config);
  static constexpr size_t kMaxCachedMappings = 250'000;
  // The predictor of `config`'s profile key (`m` is its mapping), profiled when needed, with the
  // machine's collectives when `config` runs on several ranks.
  cost::Predictor& predictor_for(const Mapping& m, const Config& config);
  // Measures the profile of `key` (`config` is one of its configurations); a derived key's siblings
  // (unprofiled_siblings) are probed with it, their profiles stored and kept in measured_ahead_.
  // `how_made` (may be null) is the note's detail: how a derived profile was made, or where a
  // measured one's steps stopped short of this machine's memory (else left empty).
  cost::Profile measure_profile(const Config& config, const std::string& key,
                                std::string* how_made);
  // The profile of a configuration with the fused AdamW (`fused_adamw` true): its twin's with
  // LibTorch's AdamW — profiled first, measured or derived however —, swapped across the optimizer
  // (cost/optimizer_swap.h: the twin's optimizer-bound steps run again, the optimizers timed
  // within the deep variant's steps). None for any other configuration.
  std::optional<cost::Profile> derive_across_optimizer(const Config& config, std::string* how_made);
  // The profile of `key` when a measured base differs from it only in the ends
  // (cost/head_difference.h): the base's blocks with this key's ends measured where the base's
  // were (probe_across_head) once per family — the pair kept in head_pairs_ —, then every key of
  // the family its blocks' profile with the base's head, shifted. None when no base qualifies,
  // or when the pair's second key is `key` itself and stored (predictor_for reuses it).
  std::optional<cost::Profile> derive_across_head(const Config& config, const std::string& key,
                                                  std::string* how_made);
  struct Base;
  // The profile of `base`'s blocks with the head of `knobs` (the base's knobs but the head's, of
  // `of`'s family): the base shifted by what its one-block steps with this head differ by
  // (measured at the base's one-block batches) and by the deep steps' of this head, which are kept
  // beside (measured at the base's two largest deep batches, and at the largest batch of the
  // family predicted to fit under a memory budget where that is beyond twice the largest of them).
  cost::Profile probe_across_head(const Base& base, const Config& knobs, const Mapping& of);
  // The keys of the space (enumerable, or with a cut-point knob: walked without the cuts) of
  // `of`'s family other than `of`'s, neither profiled nor stored for reuse, with their knobs that
  // change the computation.
  std::vector<std::pair<std::string, Config>> unprofiled_siblings(const Mapping& of);
  // A request to profile `knobs` (those that change the computation) as a rank of `of`'s layout,
  // at this model's batches.
  ProfileRequest request_of(const Config& knobs, const Mapping& of) const;
  // Measures the steps the space reads that `profile` (of `config`'s `key`, reused, measured: a
  // derived one is not reused without them) lacks — the one-block GPipe step, the deep
  // checkpointed step —, adds them, and stores the profile again.
  void complete_profile(cost::Profile& profile, const Config& config, const std::string& key);
  // The batch a profile of its own is first measured up to under a memory budget (the space's
  // middle batch, or the largest a rank runs below it: cost/profile_batches.h; extended later to
  // the largest that fits), or 0 when profiles are not capped.
  int64_t capped_batch();
  // The largest micro-batch (samples per rank and micro-batch) of the configurations of `of`'s
  // family and tp that `profile` predicts under the memory budget, and at which the deep
  // variant's step without checkpointing is expected within this machine's memory: the batch a
  // profile is extended to.
  int64_t largest_fitting_micro_batch(const cost::Profile& profile, const Mapping& of);
  // What the space's configurations run, walked once: when a profile is first measured, or a
  // stored one without the GPipe or the checkpointed step is reused (a plan over stored profiles
  // that have both never walks the space):
  struct SpaceRuns {
    // the micro-batches (samples per rank and micro-batch), ascending: of every configuration
    // when the space is enumerable, else the batch knob's values;
    std::vector<int64_t> batches;
    // whether any configuration runs GPipe in more than one micro-batch, and whether any
    // checkpoints blocks (both assumed when the space is not enumerable or not known): else a
    // profile measures no GPipe step, no checkpointed step.
    bool gpipe_micro_batches = true;
    bool checkpoints = true;
  };
  const SpaceRuns& space_runs();
  // The ranks this machine's memory is shared by in a trial (machine_ranks_): the run's, or
  // where any will do (a plan), the most the space's tp, pp and dp knobs can make.
  void hold_to_machine();
  // The machine's collectives, measured or loaded once.
  const cost::CollectiveModel& collectives();
  // The stored collectives' profile loaded, when one may be reused (else a note says why): whether
  // they are known now.
  bool load_stored_collectives();
  // Keeps `profile`, measured now: stored, counted in the profiling time and noted (`how` ends
  // the note).
  void adopt_collectives(cost::CollectiveProfile profile, const char* how);
  // The profile stored for `key` when it may be reused (a database, no --reprofile, readable, of
  // this machine and revision, and — derived — with every step the space reads); else none, and
  // `not_reused` says why when one was stored.
  std::optional<cost::Profile> reusable_profile(const std::string& key, std::string* not_reused);
  // The steps the space reads that `profile` lacks (runners/profiler.h: a profile measured for a
  // space that neither runs GPipe micro-batches nor checkpoints has neither).
  struct Missing {
    bool gpipe = false, checkpointed = false;
    std::string what() const;  // "the GPipe step", ... for the notes
  };
  Missing missing_steps(const cost::Profile& profile);
  // A stored record's machine and revision: empty when it may be reused, else why not.
  std::string why_stale(const std::string& fingerprint, const std::string& revision) const;

  Workload workload_;
  db::Database* database_;
  std::function<void(const std::string&)> on_note_;
  std::map<std::string, std::unique_ptr<cost::Predictor>> predictors_;
  // By family: a measured profile (of one rank of the family's tp), and the knobs it is of.
  struct Base {
    cost::Profile profile;
    Config knobs;
  };
  std::map<std::string, Base> bases_;
  // By family without a base: two profiles that differ only in the ends — another
  // family's base, and its blocks with this family's ends — and the knobs of the first.
  struct HeadPair {
    cost::Profile from, to;
    Config from_knobs;
  };
  std::map<std::string, HeadPair> head_pairs_;
  // Keys whose profile failed, and why: predict() says so without measuring again.
  std::map<std::string, std::string> unprofilable_;
  // Profiles measured beside another key's (its siblings'), until predictor_for takes them.
  std::map<std::string, cost::Profile> measured_ahead_;
  // The family of each profiled key, and the largest memory factor calibration put on any key of
  // a family: shared by its keys (cost::Predictor::raise_memory_scale), those profiled later too.
  std::map<std::string, std::string> family_of_;
  std::map<std::string, double> family_memory_scale_;
  void share_memory_scale(const std::string& family, double scale);
  std::unordered_map<std::string, Mapping> mappings_;     // by canonical configuration
  mutable std::map<int, std::string> workload_key_json_;  // key_of's "workload", by world
  int64_t batch_lo_ = 0, batch_hi_ = 0;
  std::optional<SpaceRuns> space_runs_;
  const space::CompiledSpace* space_ = nullptr;  // use_batches_of's
  bool reprofile_ = false;
  int ranks_per_trial_ = 0;
  bool replaying_ = false;
  double profile_seconds_ = 0;
  std::optional<double> available_;  // set_available_memory's
  int machine_ranks_ = 1;            // hold_to_machine's
  bool announced_ = false;           // the first profile measured was said to start
  std::string fingerprint_;
  std::optional<cost::CollectiveModel> collectives_;
};

}  // namespace slapo::runners
