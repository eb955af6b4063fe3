#include "tuner/tuner.h"

#include <chrono>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "tuner/alike_failures.h"
#include "tuner/confirmation.h"
#include "tuner/measure.h"
#include "tuner/measured_memory.h"
#include "tuner/memory_dominance.h"
#include "tuner/model_strategy.h"
#include "tuner/noise.h"
#include "tuner/shared_study.h"

namespace slapo::tuner {

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
std::string mib(double bytes) {
  return std::to_string(static_cast<int64_t>(bytes / (1024 * 1024) + 0.5)) + " MiB";
}

// Whether a recorded trial ran (a measurement, or one stopped early by its intermediate values),
// as opposed to one pruned without running or interrupted.
bool was_run(const db::TrialRecord& t) { return db::counts_as_measured(t); }

// The outlier check. Knobs change speed by factors (a batch twice as large may well be twice as
// fast), so a measurement is compared with its measured neighbours in the space (one step in one
// knob) in log space: with at least kOutlierMinNeighbours of them, a |robust z| of its logarithm
// beyond kOutlierZ — their spread taken as at least a factor kNeighbourSpread, so it must lie some
// 3.2 times away from what they agree on — makes it an outlier, measured kOutlierRemeasurements
// more times. Objectives that are not all positive are not checked.
constexpr double kOutlierZ = 3.5;
constexpr size_t kOutlierMinNeighbours = 2;
constexpr double kNeighbourSpread = 1.25;
constexpr int kOutlierRemeasurements = 2;

// Whether `value` of `config` lies far outside what its measured neighbours say.
bool is_outlier(const space::CompiledSpace& space, const Config& config, double value,
                const std::unordered_map<std::string, double>& measured) {
  if (!(value > 0)) return false;
  std::vector<double> around;
  for (const Config& n : space.neighbours(config)) {
    const auto it = measured.find(n.canonical_json());
    if (it == measured.end()) continue;
    if (!(it->second > 0)) return false;
    around.push_back(std::log(it->second));
  }
  return around.size() >= kOutlierMinNeighbours &&
         std::fabs(robust_z(around, std::log(value), std::log(kNeighbourSpread))) > kOutlierZ;
}

// `config` with each knob that has a memory trend moved to its memory-saving end, one knob at a
// time, where the space allows it: at most as hungry as `config`, and valid.
Config leanest_variant(const space::CompiledSpace& space, const Config& config) {
  Config lean = config;
  for (const auto& knob : space.knobs()) {
    if (knob.mem == space::MemTrend::kNone || knob.domain.empty()) continue;
    Config moved = lean;
    moved.set(knob.name,
              knob.mem == space::MemTrend::kUp ? knob.domain.front() : knob.domain.back());
    if (space.contains(moved).ok) lean = std::move(moved);
  }
  return lean;
}

struct OutlierCheck {
  std::optional<double> value;  // the trial's median after the re-measurements (none: one failed)
  size_t remeasured = 0;
};

// Measures an outlying trial twice more (recorded re-measurements).
OutlierCheck remeasure_outlier(runners::Runner& runner, db::Database& database,
                               const db::TaskRecord& task, const db::TrialRecord& trial,
                               const TunerOptions& options,
                               const std::function<void(const Progress&)>& on_progress) {
  OutlierCheck check;
  for (int i = 0; i < kOutlierRemeasurements && !interrupt_requested(); ++i) {
    if (!remeasure(runner, database, task, trial, options.objective, on_progress,
                   "re-measuring an outlier"))
      break;
    ++check.remeasured;
  }
  const auto now = database.find_trial(task.id, trial.config);
  if (now && now->remeasure_failed == 0) check.value = now->ranking_objective();
  return check;
}
}  // namespace

TuneSummary tune(const space::CompiledSpace& space, runners::Runner& runner, db::Database& database,
                 const db::TaskKey& task_key, const TunerOptions& options,
                 const std::function<void(const Progress&)>& on_progress) {
  const auto start = Clock::now();
  TuneSummary summary;
  // Made first: a strategy this run cannot use (the model's, of a command) is refused before the
  // database holds a task for it.
  std::unique_ptr<Strategy> strategy = make_strategy(options.strategy, options.cost_model);
  const db::TaskRecord task = database.find_or_create_task(task_key, options.objective);
  summary.task_id = task.id;
  SLAPO_CHECK(task.objective.metric == options.objective.metric &&
                  task.objective.minimize == options.objective.minimize,
              ErrorCode::kInvalidArgument, "task ", task.id, " was tuned to ",
              task.objective.verb(), " ", task.objective.metric, ", not to ",
              options.objective.verb(), " ", options.objective.metric,
              "; tune it with that objective, or use another database");

  strategy->begin(space, options.seed, options.objective);
  MemoryDominance dominance(space);
  std::unordered_set<std::string> known;  // canonical JSON of every recorded configuration
  std::optional<double> best;
  auto better = [&](double v) { return options.objective.better(v, best); };

  // What the task holds — on resume, and from the other tuners of a shared study as they record
  // it (tuner/shared_study.h) — taken in once.
  SharedStudy study(database, task.id, options.claim_timeout_s);
  std::optional<MeasuredMemory> memory;
  if (options.memory_budget_bytes > 0)
    memory.emplace(space, options.memory_metric, options.memory_budget_bytes);
  size_t measured_total = 0;
  std::unordered_map<std::string, double> ok_objectives;  // by configuration (outlier check)
  const auto absorb = [&](const db::TrialRecord& t, std::vector<Observation>* observed) {
    if (t.result.status == TrialStatus::kInterrupted) return false;  // never measured
    if (!known.insert(t.config.canonical_json()).second) return false;
    if (t.result.status == TrialStatus::kOom) dominance.add_oom(t.config, t.index);
    if (memory) memory->observe(t.config, t.result, t.index);
    observed->push_back({t.config, t.result.status, t.objective, step_spread(t.result.metrics),
                         was_run(t), memory ? memory->share_of_budget(t.result) : std::nullopt});
    if (was_run(t)) ++measured_total;
    if (t.objective && t.result.status == TrialStatus::kOk) {
      const double value = t.ranking_objective().value_or(*t.objective);
      ok_objectives[t.config.canonical_json()] = value;
      if (better(value)) best = value;
    }
    return true;
  };
  {
    std::vector<Observation> history;
    for (const db::TrialRecord& t : study.news()) summary.resumed += absorb(t, &history) ? 1 : 0;
    if (!history.empty()) strategy->observe(history);
  }

  std::vector<std::string> varying;  // the scalar knobs of two values or more (AlikeFailures)
  for (const space::KnobInfo& k : space.knobs())
    if (k.domain.size() >= 2) varying.push_back(k.name);
  AlikeFailures alike(options.stop_after_failures, varying);
  if (best) alike.succeeded();
  const KnownFn is_known = [&](const Config& c) { return known.count(c.canonical_json()) > 0; };
  const auto budget_reached = [&] {
    return options.trials > 0 && measured_total >= options.trials;
  };
  const auto out_of_time = [&] {
    return options.time_limit_s > 0 && seconds_since(start) >= options.time_limit_s;
  };
  size_t since_improvement = 0;
  double measuring_s = 0;
  std::vector<double> spreads;     // of the ok trials measured: summary.step_spread
  std::optional<Config> deferred;  // the first proposal, when the lean start measured another
  // One line of progress for a recorded trial.
  const auto report = [&](const db::TrialRecord& record, int64_t index) {
    if (!on_progress) return;
    Progress p;
    p.index = index;
    p.config = record.config;
    p.status = record.result.status;
    p.objective = record.objective;
    p.best = best;
    p.error = record.result.error;
    p.pruned_by = record.pruned_by;
    p.measured = measured_total;
    p.trials_left = options.trials > measured_total ? options.trials - measured_total : 0;
    p.elapsed_s = seconds_since(start);
    // The confirmation's rounds are measurements too.
    const size_t still = p.trials_left + options.confirm * options.confirm_rounds;
    p.eta_s = summary.measured > 0
                  ? measuring_s / static_cast<double>(summary.measured) * static_cast<double>(still)
                  : 0;
    on_progress(p);
  };

  // The cost model's verdicts: a configuration it predicts over the memory budget is recorded as
  // pruned, with the prediction as the reason, and never run (spaces small enough to predict
  // whole; the model strategy skips the others' too).
  const double budget = options.cost_model ? options.cost_model->memory_budget_bytes() : 0;
  if (budget > 0 && space.size() <= kMaxModelRanked) {
    const std::string note = options.cost_model->memory_limit_note();
    const std::string budget_text = note.empty() ? "the budget of " + mib(budget) : note;
    space.for_each([&](const space::PointView& point) {
      const Config config = point.to_config();
      if (is_known(config)) return true;
      const cost::Predicted predicted = options.cost_model->predict(config);
      if (!predicted.prediction || predicted.prediction->peak_bytes <= budget) return true;
      db::TrialRecord record;
      record.task_id = task.id;
      record.config = config;
      record.strategy = "cost model";
      record.seed = options.seed;
      record.started_at = db::utc_now();
      record.result =
          failed_trial(TrialStatus::kPruned,
                       "predicted out of memory: " + mib(predicted.prediction->peak_bytes) +
                           " over " + budget_text + " (cost model)");
      const int64_t index = database.add_trial(record);
      known.insert(config.canonical_json());
      ++summary.pruned;
      strategy->observe(
          {{config, TrialStatus::kOom, std::nullopt, std::nullopt, false, std::nullopt}});
      report(record, index);
      return true;
    });
  }
  for (;;) {
    if (interrupt_requested()) {
      summary.stopped_because = "interrupted";
      break;
    }
    {
      std::vector<Observation> theirs;  // recorded by the other tuners of the study
      for (const db::TrialRecord& t : study.news()) absorb(t, &theirs);
      if (!theirs.empty()) strategy->observe(theirs);
    }
    if (budget_reached()) {
      summary.stopped_because =
          "trial budget reached (" + std::to_string(options.trials) + " measured trials)";
      break;
    }
    // The time limit ends a run once it has measured something: a limit spent before the first
    // trial (on the cost model's profiles, on a busy machine) still measures the predicted best.
    if (out_of_time() && summary.measured > 0) {
      summary.stopped_because = "time limit reached";
      break;
    }
    if (options.patience > 0 && since_improvement >= options.patience) {
      summary.stopped_because = "no improvement in " + std::to_string(options.patience) + " trials";
      break;
    }
    // A claim whose tuner died is measured first; then a proposal the lean start put off; then
    // what the strategy proposes.
    std::optional<Config> adopted = study.adopt_orphan();
    if (adopted && is_known(*adopted)) adopted.reset();
    if (deferred && is_known(*deferred)) deferred.reset();
    Config config;
    if (adopted) {
      config = *adopted;
    } else if (deferred) {
      config = *deferred;
      deferred.reset();
    } else {
      const std::unordered_set<std::string>& claimed = study.claimed_by_others();
      if (options.trials > 0 && measured_total + claimed.size() >= options.trials) {
        SharedStudy::wait_for_others();  // the budget is spent unless one of theirs fails to record
        continue;
      }
      const std::vector<Config> proposed = strategy->propose(
          1, [&](const Config& c) { return is_known(c) || claimed.count(c.canonical_json()) > 0; });
      if (proposed.empty()) {
        if (!claimed.empty()) {  // what is left is being measured by others (or is orphaned)
          SharedStudy::wait_for_others();
          continue;
        }
        summary.stopped_because = strategy->why_done();
        break;
      }
      config = proposed[0];
      if (options.lean_start && known.empty() && claimed.empty()) {
        // The proposal is measured next: a strategy that walks its space in order never proposes
        // it again.
        Config lean = leanest_variant(space, config);
        if (!(lean == config)) deferred = std::exchange(config, std::move(lean));
      }
    }
    db::TrialRecord record;
    record.task_id = task.id;
    record.config = config;
    record.strategy = adopted ? "adopted claim" : strategy->name();
    record.seed = options.seed;
    record.started_at = db::utc_now();
    bool predicted_oom = false;  // by the measured memory
    if (const auto proof = dominance.proof_of_oom(config)) {
      record.result =
          failed_trial(TrialStatus::kPruned, "out of memory, as trial " + std::to_string(*proof) +
                                                 " needs less memory and ran out");
      record.pruned_by = proof;
      ++summary.pruned;
    } else if (const auto why = memory ? memory->over_budget(config) : std::nullopt) {
      record.result = failed_trial(TrialStatus::kPruned, *why);
      predicted_oom = true;
      ++summary.pruned;
    } else {
      if (!adopted) {
        const db::ClaimOutcome claim = study.claim(config, options.trials);
        if (claim == db::ClaimOutcome::kBudgetSpent) {
          SharedStudy::wait_for_others();  // their trials may fail to record; then it is ours
          continue;
        }
        if (claim != db::ClaimOutcome::kClaimed) continue;  // recorded or being measured: news
      }
      const Measurement m = measure(runner, config, options.objective);
      record.result = m.result;
      record.objective = m.objective;
      if (record.result.status == TrialStatus::kInterrupted) {
        // Not a measurement: recorded so the run shows what it was doing, measured on resume.
        report(record, database.add_trial(record));
        study.recorded();
        summary.stopped_because = "interrupted";
        break;
      }
      record.duration_s = m.duration_s;
      measuring_s += record.duration_s;
      ++summary.measured;
      ++measured_total;
      if (record.result.status != TrialStatus::kOk) ++summary.failed;
      if (const auto spread = step_spread(record.result.metrics);
          spread && record.result.status == TrialStatus::kOk)
        spreads.push_back(*spread);
      if (options.cost_model) options.cost_model->observe(config, record.result);
    }
    const int64_t index = database.add_trial(record);
    study.recorded();
    known.insert(config.canonical_json());
    if (record.result.status == TrialStatus::kOom) dominance.add_oom(config, index);
    if (memory) memory->observe(config, record.result, index);
    // A point pruned by proof or prediction is observed as what it is shown to be; one stopped
    // early as the failure it is.
    strategy->observe(
        {{config, record.pruned_by || predicted_oom ? TrialStatus::kOom : record.result.status,
          record.objective, step_spread(record.result.metrics), was_run(record),
          memory ? memory->share_of_budget(record.result) : std::nullopt}});
    report(record, index);
    if (record.result.status == TrialStatus::kPruned && !was_run(record)) continue;
    if (alike.observe(config, record.result.status, record.result.error)) {
      summary.stopped_because = alike.why();
      break;
    }
    if (record.objective && record.result.status == TrialStatus::kOk) {
      // An obvious outlier among the trials so far (a trial on a machine busy with something
      // else) is measured twice more at once, so its median, not the fluke, ranks it.
      std::optional<double> value = record.objective;
      if (is_outlier(space, config, *record.objective, ok_objectives)) {
        record.index = index;
        const OutlierCheck check =
            remeasure_outlier(runner, database, task, record, options, [&](Progress p) {
              p.measured = measured_total;
              p.elapsed_s = seconds_since(start);
              if (on_progress) on_progress(p);
            });
        value = check.value;
        summary.remeasured += check.remeasured;
      }
      if (value) ok_objectives[config.canonical_json()] = *value;
      if (value && better(*value)) {
        best = value;
        since_improvement = 0;
        continue;
      }
    }
    ++since_improvement;
  }
  // The summary's last figures, whichever way the run ends.
  const auto finished = [&] {
    const auto top = database.best(task.id, 1);
    if (!top.empty()) summary.best = top[0];
    summary.elapsed_s = seconds_since(start);
    if (!spreads.empty()) summary.step_spread = median(spreads);
    // The task's trials are read only when some were measured again (usually none are).
    if (const auto rounds = database.remeasurements(task.id); !rounds.empty())
      summary.remeasured_spread = remeasured_spread(database.trials(task.id), rounds);
    if (memory) summary.memory_misses = memory->misses();
    return summary;
  };
  if (interrupt_requested()) {
    if (summary.stopped_because != "interrupted")
      summary.stopped_because += "; interrupted before the confirmation";
    return finished();  // no confirmation: the user asked to stop
  }
  const ConfirmationCounts confirmed =
      confirm_best(runner, database, task, options, out_of_time, [&](Progress p) {
        p.measured = measured_total;  // re-measurements are not trials
        p.elapsed_s = seconds_since(start);
        if (on_progress) on_progress(p);
      });
  if (confirmed.interrupted) summary.stopped_because += "; the confirmation was interrupted";
  summary.remeasured += confirmed.remeasured;
  summary.remeasure_failed += confirmed.failed;
  if (confirmed.out_of_time)
    summary.stopped_because += "; the confirmation stopped at the time limit";
  return finished();
}

}  // namespace slapo::tuner
