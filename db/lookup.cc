#include "db/lookup.h"

namespace slapo::db {

std::optional<Config> best_config(Database& database, int64_t task) {
  const auto best = database.best(task, 1);
  if (best.empty()) return std::nullopt;
  return best[0].config;
}

std::optional<Config> best_config_for(Database& database, const std::string& workload_json,
                                      const std::string& fingerprint_json, bool any_machine) {
  std::optional<Config> elsewhere;
  for (const TaskRecord& t : database.tasks()) {
    if (t.key.workload_json != workload_json) continue;
    if (t.key.fingerprint_json == fingerprint_json) {
      if (auto c = best_config(database, t.id)) return c;
    } else if (any_machine) {
      // Tasks come oldest first: the most recent measurement elsewhere wins.
      if (auto c = best_config(database, t.id)) elsewhere = c;
    }
  }
  return elsewhere;
}

}  // namespace slapo::db
