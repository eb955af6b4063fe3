#pragma once
// Workload: what a trial trains, from the space file's [workload] table, and the measurement
// protocol (measure_trial). The table's keys and their meaning: docs/runners.md; the one list of
// them that parsing and the canonical JSON share: workload_fields() in workload.cc.

#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/trial.h"
#include "dist/world.h"
#include "models/model_spec.h"

namespace slapo::runners {

struct Workload {
  std::string model;
  std::string template_name;  // empty: the model's default
  int64_t batch_size = 8;
  int64_t seq_len = 0;  // 0: the preset's maximum
  int64_t vocab = 0;    // 0: the preset's
  int64_t layers = 0;   // 0: the preset's (blocks of the model: a deeper or shallower variant)
  std::string dtype = "float32";
  std::string optimizer = "adamw";
  double lr = 1e-4;
  int warmup = 2;
  int steps = 5;
  int threads = 2;
  uint64_t seed = 0;
  uint64_t memory_budget = 0;  // 0: none
  std::string data;
  std::string data_dtype = "uint16";
  // A checkpoint (safetensors or torch.save; the zoo's names or a Hugging Face layout) that the
  // model starts from instead of random weights; empty: random (docs/weights.md).
  std::string weights;

  // Parses the [workload] table (as JSON). Throws Error(kInvalidArgument) naming `origin` and the
  // key for unknown keys and bad values.
  static Workload from_json(const std::string& json, const std::string& origin);
  std::string to_json() const;
  // The schedule template to apply: `template_name`, or the model family's default.
  std::string schedule_template() const;
  // The model preset with this workload's overrides (vocab, layers).
  models::ModelSpec spec() const;
  // A trial's batch size and sequence length: the configuration's knob, else this workload's
  // (else the model's longest sequence).
  int64_t batch_size_for(const Config& config) const;
  int64_t seq_len_for(const Config& config) const;
};

// Checks, before anything runs, that the workload's template understands every knob of
// `config` and that the model exists. Throws Error(kInvalidArgument).
void check_workload(const Workload& workload, const Config& config);

// Measures one configuration in this process: builds the model, applies the template, trains
// `warmup` + `steps` steps and reports the metrics of runners/runner.h. Never throws for the
// candidate's failures: out of memory (the budget included) is `oom`; a schedule that cannot be
// applied is `schedule_error`; any other exception or a non-finite loss is `runtime_error`.
TrialResult measure_trial(const Workload& workload, const Config& config);
// The same as one rank of a job: every rank calls it with its groups; the metrics are the job's
// (peak memory and RSS: the largest rank; comm_share and bubble_share: means over ranks). The
// configuration's tp/pp/dp must match the groups' layout.
TrialResult measure_trial(const Workload& workload, const Config& config,
                          const dist::ParallelGroups& groups);

}  // namespace slapo::runners
