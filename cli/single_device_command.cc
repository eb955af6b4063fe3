// slapo-tune single-device: tune a space, one rank per trial.

#include "cli/commands.h"
#include "cli/tune_run.h"
#include "core/error.h"

namespace slapo::cli {

TuneOptions parse_single_device(const Args& args) {
  TuneOptions o = parse_tune(args, "single-device");
  SLAPO_CHECK(o.help || o.runner.nproc == 1, ErrorCode::kInvalidArgument, "single-device: --nproc ",
              o.runner.nproc, " runs several ranks per trial: use slapo-tune single-node");
  return o;
}

}  // namespace slapo::cli
