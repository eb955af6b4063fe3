// slapo-tune single-node: tune a space, N ranks per trial on this machine.

#include "cli/commands.h"
#include "cli/tune_run.h"
#include "core/error.h"

namespace slapo::cli {

TuneOptions parse_single_node(const Args& args) {
  TuneOptions o = parse_tune(args, "single-node");
  o.single_node = true;
  SLAPO_CHECK(o.help || o.runner.nproc >= 2, ErrorCode::kInvalidArgument,
              "single-node: --nproc N (2 or more ranks per trial) is required");
  return o;
}

}  // namespace slapo::cli
