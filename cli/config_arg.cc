#include "cli/config_arg.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace slapo::cli {

Config parse_config_arg(const std::string& arg) {
  if (!arg.empty() && arg[0] == '@') {
    const std::string path = arg.substr(1);
    std::ifstream in(path);
    SLAPO_CHECK(in.good(), ErrorCode::kNotFound, "--config ", arg, ": cannot open ", path);
    std::ostringstream text;
    text << in.rdbuf();
    return Config::from_json(text.str(), "--config " + path);
  }
  return Config::from_json(arg, "--config");
}

}  // namespace slapo::cli
