#include "models/model_registry.h"

#include <map>

#include "core/error.h"
#include "models/family_table.h"
#include "models/template_knobs.h"

namespace slapo::models {

namespace {
std::map<std::string, FamilyRegistration>& registrations() {
  static std::map<std::string, FamilyRegistration> all;
  return all;
}
}  // namespace

void register_family(FamilyRegistration family) {
  const std::string name = family.traits.name;
  for (const FamilyTraits& f : model_families())
    SLAPO_CHECK(f.name != name, ErrorCode::kInvalidArgument, "register_family: a family '", name,
                "' exists already");
  SLAPO_CHECK(!name.empty() && family.build && !family.traits.blocks.empty(),
              ErrorCode::kInvalidArgument, "register_family '", name,
              "': needs a name, a build function and the path of its blocks");
  for (const std::string& knob : family.knobs)
    SLAPO_CHECK(find_template_knob(knob) != nullptr, ErrorCode::kInvalidArgument,
                "register_family '", name, "': knob '", knob,
                "' is not a row of the knob table (slapo-tune templates show gpt lists them)");
  mutable_model_families().push_back(family.traits);
  registrations().emplace(name, std::move(family));
}

void register_preset(ModelSpec spec) {
  for (const std::string& p : model_presets())
    SLAPO_CHECK(p != spec.preset, ErrorCode::kInvalidArgument, "register_preset: a model '",
                spec.preset, "' exists already");
  SLAPO_CHECK(registered_family(spec.family) != nullptr, ErrorCode::kInvalidArgument,
              "register_preset '", spec.preset, "': family '", spec.family,
              "' is not registered (register_family first)");
  if (spec.layer_norm_eps <= 0) spec.layer_norm_eps = spec.traits().layer_norm_eps;
  mutable_model_presets().push_back(std::move(spec));
}

const FamilyRegistration* registered_family(const std::string& family) {
  const auto it = registrations().find(family);
  return it == registrations().end() ? nullptr : &it->second;
}

}  // namespace slapo::models
