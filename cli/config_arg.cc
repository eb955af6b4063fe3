#include "cli/config_arg.h"

#include <fstream>
#include <sstream>

#include "cli/options.h"
#include "core/error.h"
#include "core/read_file.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace slapo::cli {

namespace {
// The largest --config @FILE read (a configuration is a few hundred bytes).
constexpr size_t kMaxConfigFileBytes = 1 << 20;
}  // namespace

Config parse_config_arg(const std::string& arg) {
  if (!arg.empty() && arg[0] == '@') {
    const std::string path = arg.substr(1);
    const std::string text = for_flag("--config", arg, [&] {
      return read_file_capped(path, kMaxConfigFileBytes, "the configuration file",
                              "a configuration is a JSON object of knob values");
    });
    return Config::from_json(text, "--config " + path);
  }
  return Config::from_json(arg, "--config");
}

space::Space load_space(const std::string& file, const std::vector<std::string>& params) {
  space::Space declared = space::load_space_file(file);
  for (const std::string& p : params) for_flag("--param", p, [&] { declared.set_parameter(p); });
  return declared;
}

Config config_in_space(const space::Space& space, const std::string& config_arg) {
  const Config config = parse_config_arg(config_arg);
  const space::Validity validity = space::CompiledSpace::compile(space).contains(config);
  SLAPO_CHECK(validity.ok, ErrorCode::kInvalidArgument, "--config: not a configuration of ",
              space.origin, ": ", validity.reason);
  return config;
}

}  // namespace slapo::cli
