#pragma once
// The obvious oracle: every point of the Cartesian product of the knobs' domains, in loop order,
// kept when CompiledSpace::contains() accepts it. Cut-point knobs range over every ascending
// subset of 1 .. max_layers - 1. Only for small spaces.

#include <vector>

#include "core/config.h"
#include "space/compiled_space.h"

namespace slapo::space::testing {

std::vector<Config> brute_force(const CompiledSpace& space, int max_layers = 10);

}  // namespace slapo::space::testing
