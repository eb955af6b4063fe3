#include "core/layout.h"

#include "core/error.h"

namespace slapo {

std::string Layout::to_string() const {
  return "tp=" + std::to_string(tp) + " dp=" + std::to_string(dp) + " pp=" + std::to_string(pp);
}

void Layout::check_world(int ranks) const {
  SLAPO_CHECK(world() == ranks, ErrorCode::kInvalidArgument, "the configuration (", to_string(),
              ") needs ", world(), " ranks; this run has ", ranks);
}

}  // namespace slapo
