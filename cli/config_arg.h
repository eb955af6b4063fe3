#pragma once
// --config values: JSON text, or @FILE holding JSON (e.g. `slapo-tune db best --format json`).

#include <string>

#include <vector>

#include "core/config.h"
#include "space/space.h"

namespace slapo::cli {

// Throws Error(kNotFound) for an unreadable @FILE, Error(kParse) for bad JSON, naming --config.
Config parse_config_arg(const std::string& arg);

// Loads a space file and applies --param NAME=VALUE overrides.
space::Space load_space(const std::string& file, const std::vector<std::string>& params);

// --config parsed and checked to be a point of `space` (Error(kInvalidArgument) naming the
// violated constraint or knob otherwise).
Config config_in_space(const space::Space& space, const std::string& config_arg);

}  // namespace slapo::cli
