#pragma once
// The schedule templates' knobs as one table. Each row is a knob: its name, type, allowed values,
// default, what it does, which model families it applies to, and how its value is read into a
// TemplateConfig. The table is the only list of knobs: it drives the checks of a configuration
// (models/templates.h), `slapo-tune templates` and the knob reference in docs/schedule.md (a test
// keeps that section equal to what the table prints).
//
// To add a knob: add a field to TemplateConfig, a row here (template_knobs.cc), and the primitives
// it implies to apply_template (templates.cc).

#include <string>
#include <vector>

#include "core/value.h"
#include "models/model_spec.h"
#include "models/template_config.h"

namespace slapo::models {

enum class KnobKind {
  kBool,    // true | false
  kChoice,  // one of `choices`
  kNumber,  // a number (range checked by the row)
  kWhole,   // a whole number (range checked by the row)
  kCuts,    // a list of block indices
};

struct TemplateKnob {
  std::string name;
  KnobKind kind = KnobKind::kBool;
  std::vector<std::string> choices;  // kChoice: the allowed values, the default first
  std::string default_text;          // as the reference shows it
  std::string help;                  // one paragraph
  bool runner = false;               // read by the runner and trainer, not turned into primitives
  // Whether the knob means something for a family (null: for every family).
  bool (*applies)(const FamilyTraits&) = nullptr;
  // Reads a value that has the row's kind into `out`. Throws Error(kInvalidArgument) naming the
  // knob for a value out of range.
  void (*read)(const Value& value, const ModelSpec& spec, TemplateConfig* out) = nullptr;

  bool applies_to(const FamilyTraits& family) const {
    return applies == nullptr || applies(family);
  }
  // "true | false", "naive | fused_qkv | baddbmm", "number", ...
  std::string values_text() const;
};

// Every knob, in reference order.
const std::vector<TemplateKnob>& template_knobs();

// The knob named `name`, or null.
const TemplateKnob* find_template_knob(const std::string& name);

// The knob reference of `family`'s template as a Markdown table (name, values, default, meaning).
std::string knob_reference_markdown(const FamilyTraits& family);

// Why a step of `batch` samples cannot run on `dp` data-parallel ranks in `micro_batches`
// micro-batches a rank — they do not split it evenly —, or "" when it can: what the trainer
// refuses a step with (runners/parallel_trainer.cc) and the cost model calls invalid.
std::string batch_split_error(int64_t batch, int64_t dp, int64_t micro_batches);

}  // namespace slapo::models
