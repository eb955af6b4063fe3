#include "tuner/confirmation.h"

#include <set>
#include <vector>

#include "core/interrupt.h"
#include "tuner/measure.h"

namespace slapo::tuner {

std::optional<db::Remeasurement> remeasure(runners::Runner& runner, db::Database& database,
                                           const db::TaskRecord& task, const db::TrialRecord& trial,
                                           const Objective& objective,
                                           const std::function<void(const Progress&)>& on_progress,
                                           const std::string& note) {
  db::Remeasurement r;
  r.task_id = task.id;
  r.trial_index = trial.index;
  r.started_at = db::utc_now();
  const Measurement m = measure(runner, trial.config, objective);
  if (m.result.status == TrialStatus::kInterrupted) return std::nullopt;
  r.result = m.result;
  r.objective = m.objective;
  r.duration_s = m.duration_s;
  r.round = database.add_remeasurement(r);
  if (on_progress) {
    Progress p;
    p.index = trial.index;
    p.round = r.round;
    p.config = trial.config;
    p.status = r.result.status;
    p.objective = r.objective;
    p.error = r.result.status == TrialStatus::kOk ? note : r.result.error;
    if (const auto now = database.find_trial(task.id, trial.config))
      p.confirmed = now->confirmed_objective;
    const auto top = database.best(task.id, 1);
    if (!top.empty()) p.best = top[0].ranking_objective();
    on_progress(p);
  }
  return r;
}

ConfirmationCounts confirm_best(runners::Runner& runner, db::Database& database,
                                const db::TaskRecord& task, const TunerOptions& options,
                                const std::function<bool()>& out_of_time,
                                const std::function<void(const Progress&)>& on_progress) {
  ConfirmationCounts counts;
  if (options.confirm == 0 || options.confirm_rounds == 0) return counts;
  const auto rounds = static_cast<int64_t>(options.confirm_rounds);
  std::set<int64_t> chosen;  // trials this run took into the confirmation

  for (;;) {
    // One round: every trial of the current top that lacks rounds is measured once more.
    std::vector<db::TrialRecord> due;
    for (db::TrialRecord& t : database.best(task.id, options.confirm)) {
      if (t.remeasured >= rounds) continue;
      // The cap, on what this run takes in (an earlier run's confirmed trials do not use it up).
      if (!chosen.count(t.index) && chosen.size() >= 2 * options.confirm) continue;
      due.push_back(std::move(t));
    }
    if (due.empty()) return counts;
    for (const db::TrialRecord& t : due) {
      if (out_of_time()) {
        counts.out_of_time = true;
        return counts;
      }
      if (interrupt_requested()) {
        counts.interrupted = true;
        return counts;
      }
      chosen.insert(t.index);
      const auto r = remeasure(runner, database, task, t, options.objective, on_progress);
      if (!r) {
        counts.interrupted = true;
        return counts;
      }
      ++counts.remeasured;
      if (r->result.status != TrialStatus::kOk) ++counts.failed;
    }
  }
}

}  // namespace slapo::tuner
