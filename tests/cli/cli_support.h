#pragma once
// Runs the slapo-tune binary for the CLI tests.

#include <string>

#include "core/text.h"

namespace slapo::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The example space most CLI tests tune: gpt-tiny, two batch sizes, a few steps.
inline const std::string kTrialSpace =
    std::string(SLAPO_SOURCE_DIR) + "/examples/spaces/gpt-tiny-trial.toml";

// Runs slapo-tune with `args` (already shell-quoted where needed), standard input closed.
Outcome run(const std::string& args);
using slapo::last_line;  // the one core/text.h has
// A database path of this process in the test's temporary directory, removed first.
std::string temp_db(const std::string& name);
// Writes `text` to a file of the test's temporary directory; returns its path.
std::string write_temp(const std::string& name, const std::string& text);

}  // namespace slapo::testing
