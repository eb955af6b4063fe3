#pragma once
// Verification in one process: does a workload's model, scheduled with a configuration's
// template, compute what the original computes? Beside verify_parallel (runners/parallel_verify.h),
// which checks each rank's part of a tp × pp × dp job.
//
// Builds the model twice from the same seed — original, and scheduled — runs both on the same
// inputs with dropout on (keyed masks: the same draws), and compares the outputs, every parameter
// gradient (schedule::verify) and the loss over `steps` AdamW steps.

#include <string>
#include <vector>

#include "core/config.h"
#include "runners/workload.h"
#include "schedule/language/verify.h"

namespace slapo::runners {

struct WorkloadVerifyReport {
  std::string header;         // "model gpt-tiny, template gpt, batch 2, seq 16, config {...}"
  std::string schedule_text;  // the primitives applied ("" for none)
  std::string plan_text;      // build()'s plan
  schedule::VerifyReport outputs_and_grads;
  std::vector<double> curve_ref, curve;  // losses over the AdamW steps
  double curve_max_abs() const;
  // Outputs, gradients and the loss curve within `tolerance` (absolute).
  bool within(double tolerance) const;
  // Everything above as the text `slapo-tune verify` prints, ending with the verdict line.
  std::string to_string(double tolerance) const;
};

// Throws Error(kInvalidArgument) for a configuration the template refuses (before building).
WorkloadVerifyReport verify_workload(const Workload& workload, const Config& config, int steps,
                                     double lr);

}  // namespace slapo::runners
