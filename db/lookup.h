#pragma once
// Starting a training program with the tuned configuration (as TVM applies its tuning database
// at build time):
//
//   auto db = slapo::db::Database::open_existing("tune.db");
//   auto best = slapo::db::best_config_for(*db, workload_json, fingerprint_json);
//   if (best) slapo::models::apply_template(*sch, spec, template_name, *best);
//
// examples/tuned_training.cc is a complete program.

#include <optional>
#include <string>

#include "core/config.h"
#include "db/database.h"

namespace slapo::db {

// The best ok configuration of task `task`, or nothing when it has none.
std::optional<Config> best_config(Database& database, int64_t task);

// The best configuration among the tasks with this workload (canonical JSON as recorded) on this
// machine (fingerprint JSON). With `any_machine`, when no task matches the fingerprint, the most
// recent task measured elsewhere is used (its measurements may not transfer).
std::optional<Config> best_config_for(Database& database, const std::string& workload_json,
                                      const std::string& fingerprint_json,
                                      bool any_machine = false);

}  // namespace slapo::db
