#pragma once
// What `predict`, `plan` and the tuning commands share to use the cost model: the model of a
// space's built-in workload, its profiles kept in the tuning database.

#include <iosfwd>
#include <memory>

#include "core/text.h"  // format_bytes, for what uses the model
#include "db/database.h"
#include "runners/cost_model.h"
#include "space/compiled_space.h"

namespace slapo::cli {

// The cost model of `space`'s [workload]; profiles are read from and stored in `database` (may be
// null). One line per profile measured or reused goes to `notes`. Throws Error(kInvalidArgument)
// when the space has no built-in workload (the model predicts only those).
std::unique_ptr<runners::WorkloadCostModel> make_cost_model(const space::Space& space,
                                                            const space::CompiledSpace& compiled,
                                                            db::Database* database, bool reprofile,
                                                            std::ostream& notes);

}  // namespace slapo::cli
