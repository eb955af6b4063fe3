#include "cli/cost_setup.h"

#include <cstdio>
#include <ostream>

#include "core/error.h"

namespace slapo::cli {

std::unique_ptr<runners::WorkloadCostModel> make_cost_model(const space::Space& space,
                                                            const space::CompiledSpace& compiled,
                                                            db::Database* database, bool reprofile,
                                                            std::ostream& notes) {
  SLAPO_CHECK(!space.workload_json.empty() && space.workload_json != "{}",
              ErrorCode::kInvalidArgument, space.origin,
              ": no [workload]: the cost model predicts the built-in workloads only");
  auto model = std::make_unique<runners::WorkloadCostModel>(
      runners::Workload::from_json(space.workload_json, space.origin), database,
      [&notes](const std::string& line) { notes << "cost model: " << line << "\n"
                                                << std::flush; });
  model->set_reprofile(reprofile);
  model->use_batches_of(compiled);
  return model;
}

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024));
  return text;
}

}  // namespace slapo::cli
