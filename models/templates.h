#pragma once
// Schedule templates: how the knobs of a configuration become primitives on a zoo model.
//
// A template is named after the model family it schedules ("gpt", "bert", "mlp") and understands
// the knobs of models/template_knobs.h that apply to that family (`slapo-tune templates show
// NAME` prints them). A knob the template does not understand, a value of the wrong type or out
// of range, or a combination it cannot build is an Error(kInvalidArgument) naming the knob before
// anything is built.

#include <string>
#include <vector>

#include "core/config.h"
#include "models/model_spec.h"
#include "models/template_config.h"
#include "schedule/language/schedule.h"

namespace slapo::models {

struct TemplateInfo {
  std::string name;
  std::string family;              // the model family it schedules
  std::vector<std::string> knobs;  // the knobs it understands, in reference order
};

const std::vector<TemplateInfo>& schedule_templates();
// The template called `name`. Throws Error(kInvalidArgument) listing the templates otherwise.
const TemplateInfo& find_template(const std::string& name);
// The template used when a workload names none: the model's family.
std::string default_template(const ModelSpec& spec);

// Parses and checks `config` for template `name` on `spec`: every knob understood, of its type
// and in range, the combination buildable. `world_size` > 0 is the job's rank count: when the
// configuration names no dp, data parallelism fills the ranks that tp and pp leave (dp = 1 when
// `world_size` is 0). Throws Error(kInvalidArgument) naming the knob.
TemplateConfig parse_template_config(const std::string& name, const ModelSpec& spec,
                                     const Config& config, int world_size = 0);

// The same, for callers that only need to know that it parses.
void check_template(const std::string& name, const ModelSpec& spec, const Config& config);

// Applies the template's primitives to `sch` (a schedule of a model built from `spec`).
void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const TemplateConfig& config);
void apply_template(schedule::Schedule& sch, const ModelSpec& spec, const std::string& name,
                    const Config& config);

// The parallel layout a configuration asks for (parse_template_config's `parallel`).
ParallelKnobs parallel_knobs(const ModelSpec& spec, const Config& config, int world_size = 0);

// The number of blocks checkpointed for `config` (from ckpt_ratio or ckpt_layers; 0 if neither).
int64_t checkpointed_blocks(const ModelSpec& spec, const Config& config);

// The type name of an attention variant, for replace_with_zoo_module.
std::string attention_type(AttentionKind attn);

// Makes the zoo's replacement modules for schedule::replay: the attention variants, the eager
// fusions (FusedLayerNorm, FusedMlp, LayerNormAfterAdd, FusedAddLayerNorm, FusedBiasDropoutAdd,
// LinearBiasLater, Identity) and the fused LM head
// (not under tensor parallelism: whether that head is split by vocabulary is the template's to
// say).
void replace_with_zoo_module(schedule::Schedule& target, const std::string& type_name);

}  // namespace slapo::models
