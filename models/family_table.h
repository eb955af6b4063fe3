#pragma once
// The tables of families and presets as the registry extends them (models/model_registry.h);
// internal to models/.

#include <vector>

#include "models/family.h"
#include "models/model_spec.h"

namespace slapo::models {

std::vector<FamilyTraits>& mutable_model_families();
std::vector<ModelSpec>& mutable_model_presets();

}  // namespace slapo::models
