#pragma once
// --config values: JSON text, or @FILE holding JSON (e.g. `slapo-tune db best --format json`).

#include <string>

#include "core/config.h"

namespace slapo::cli {

// Throws Error(kNotFound) for an unreadable @FILE, Error(kParse) for bad JSON, naming --config.
Config parse_config_arg(const std::string& arg);

}  // namespace slapo::cli
