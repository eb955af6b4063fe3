#pragma once
// What differs between two tasks' keys, in words: the lines `db tasks` prints under tasks of the
// same space, and the reason a --study name is refused for a run that is not its task's.

#include <string>
#include <vector>

#include "db/database.h"

namespace slapo::cli {

// One line per difference, "FIELD: A → B": the fields of the workload or command JSON one by one,
// the space, the runner, the ranks, and the fingerprint's ("machine.cpu", "slapo.measuring_code").
// Empty when the keys are equal.
std::vector<std::string> key_differences(const db::TaskKey& a, const db::TaskKey& b);

}  // namespace slapo::cli
