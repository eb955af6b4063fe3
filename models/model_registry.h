#pragma once
// Models a program brings of its own (docs/own-model.md). A program links slapo, registers a
// family — its traits, a factory, the knobs its template understands and what they do, and
// optionally its batches and loss — and presets of it, then hands its command line to
// slapo::cli::run_command_line. Every command and every runner knows the registered models:
// runners start the same program again (workers, ranks, the fork server), which registers them
// again before it reads its arguments.
//
// Registration is for the start of main, before any command runs; it is not thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/model_spec.h"
#include "models/template_config.h"
#include "models/training_batch.h"
#include "schedule/language/schedule.h"
#include "schedule/language/slot_module.h"

namespace slapo::models {

struct FamilyRegistration {
  // Its name (the template's too), a description, and the paths a schedule needs: `blocks` (a
  // schedule::Sequence of the repeated blocks, which checkpointing and pipeline cuts address),
  // `embedding` and `head`. The other traits say what the built-in knobs may assume of it.
  FamilyTraits traits;
  // A model of `spec`, its weights drawn from the default generator (seeded before the call): a
  // schedule::SlotModule that is also a schedule::Pipelined — prologue (token ids → hidden),
  // the body at `traits.blocks`, epilogue (hidden → logits). It must honour spec.layers (the cost
  // model profiles variants of 1 and a few blocks).
  std::function<std::shared_ptr<schedule::SlotModule>(const ModelSpec&)> build;
  // The knobs of models/template_knobs.h its template understands: each is type- and
  // range-checked and read into TemplateConfig as for the built-in templates; any other knob is
  // refused naming these. Checkpointing (ckpt_ratio, ckpt_layers) and the pipeline (pp, cuts,
  // micro_batches) are applied by slapo to the blocks; dp, batch_size and seq_len by the runner.
  std::vector<std::string> knobs;
  // What the other knobs do: primitives on a fresh schedule of a model of `spec`, before slapo
  // adds the checkpoints and cuts. May be empty when the knobs are only those slapo applies.
  std::function<void(schedule::Schedule&, const ModelSpec&, const TemplateConfig&)> apply;
  // What it learns from a window of tokens [b, s + 1], and its loss. Empty: as `traits` say
  // (training_batch.h) and the mean token cross-entropy.
  std::function<TrainingBatch(const ModelSpec&, const at::Tensor& window)> batch;
  std::function<at::Tensor(const at::Tensor& logits, const at::Tensor& targets)> loss;
};

// Registers a family. Throws Error(kInvalidArgument) when its name is taken or it has no build or
// no blocks path, or a knob is not a row of the knob table.
void register_family(FamilyRegistration family);
// Registers a preset of a registered family (spec.family). Throws Error(kInvalidArgument) when its
// name is taken or its family unknown.
void register_preset(ModelSpec spec);
// The registration of `family`, or null (a built-in family).
const FamilyRegistration* registered_family(const std::string& family);

}  // namespace slapo::models
