#include "cli/cost_setup.h"

#include <ostream>
#include <utility>

#include "cli/options.h"
#include "core/error.h"

namespace slapo::cli {

std::unique_ptr<runners::WorkloadCostModel> make_cost_model(const space::Space& space,
                                                            const space::CompiledSpace& compiled,
                                                            db::Database* database, bool reprofile,
                                                            std::ostream& notes) {
  SLAPO_CHECK(!space.workload_json.empty() && space.workload_json != "{}",
              ErrorCode::kInvalidArgument, space.origin,
              ": no [workload]: the cost model predicts the built-in workloads only");
  runners::Workload workload = runners::Workload::from_json(space.workload_json, space.origin);
  // A space no trial could run (an unknown model, a knob the template does not understand) is
  // refused, not planned as "not predictable".
  if (compiled.size() > 0) check_workload_of(space.origin, workload, compiled.at(0));
  auto model = std::make_unique<runners::WorkloadCostModel>(
      std::move(workload), database, [&notes](const std::string& line) {
        notes << "cost model: " << line << "\n" << std::flush;
      });
  model->set_reprofile(reprofile);
  model->use_batches_of(compiled);
  return model;
}

}  // namespace slapo::cli
