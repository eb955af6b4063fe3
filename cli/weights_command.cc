// slapo-tune weights show FILE [--model M] | convert IN OUT --model M [--to L] |
// init OUT --model M [--to L]: the checkpoints a workload starts from (docs/weights.md).

#include <iomanip>
#include <ostream>
#include <sstream>

#include <torch/nn/module.h>

#include "cli/commands.h"
#include "core/error.h"
#include "models/weights/hf_layouts.h"
#include "models/weights/weights_file.h"
#include "models/zoo.h"

namespace slapo::cli {

namespace {

constexpr const char* kWeightsUsage =
    "usage: slapo-tune weights ACTION FILE... [options]\n"
    "\n"
    "Checkpoints: safetensors, or a zip written by PyTorch's torch.save (told apart by their\n"
    "first bytes); in the zoo's names or a Hugging Face layout (see --layout). A workload\n"
    "starts from one with [workload] weights = \"FILE\".\n"
    "\n"
    "actions:\n"
    "  show FILE          every tensor's name, dtype and shape; with --model, whether and how it\n"
    "                     loads into that model (the layout found, missing and unexpected names)\n"
    "  convert IN OUT     loads IN into --model and saves it under the names of --to (the zoo's\n"
    "                     by default): safetensors when OUT ends in .safetensors, else as\n"
    "                     torch.save writes\n"
    "  init OUT           saves --model's initial weights (drawn from --seed), under --to's names\n";

// "the checkpoint's names: auto, zoo, gpt2, ...", from the table of layouts.
std::string layout_help() {
  std::string help = "the checkpoint's names: auto";
  for (const models::WeightLayout& l : models::weight_layouts()) help += ", " + l.name;
  return help;
}

void declare(WeightsOptions* o, OptionSet& set) {
  static const std::string kLayoutHelp = layout_help();
  static const std::string kToHelp = "convert, init: the names OUT is written under: " +
                                     layout_help().substr(layout_help().find("auto, ") + 6);
  // clang-format off
  set.visible.add_options()
      ("model", po::value<std::string>(&o->model), "a zoo preset (slapo-tune templates list)")
      ("layout", po::value<std::string>(&o->layout)->default_value("auto"),
       kLayoutHelp.c_str())
      ("to", po::value<std::string>(&o->to)->default_value("zoo"),
       kToHelp.c_str())
      ("seed", po::value<uint64_t>(&o->seed)->default_value(0), "init: the weights' seed");
  // clang-format on
  set.hidden.add_options()("action", po::value<std::string>(&o->action))(
      "files", po::value<std::vector<std::string>>(&o->files));
  set.positional.add("action", 1).add("files", -1);
}

std::string shape_text(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

WeightsOptions parse_weights(const Args& args) {
  WeightsOptions o = parse_options<WeightsOptions>(args, declare);
  if (o.help) return o;
  const size_t files = o.action == "show" || o.action == "init" ? 1 : 2;
  SLAPO_CHECK(o.action == "show" || o.action == "convert" || o.action == "init",
              ErrorCode::kInvalidArgument, "weights: ",
              o.action.empty() ? "missing ACTION" : "unknown action '" + o.action + "'",
              " (expected show, convert or init; see 'slapo-tune weights --help')");
  SLAPO_CHECK(o.files.size() == files, ErrorCode::kInvalidArgument, "weights ", o.action,
              ": expected ", files == 1 ? "one file" : "two files (IN OUT)", ", got ",
              o.files.size());
  SLAPO_CHECK(o.action == "show" || !o.model.empty(), ErrorCode::kInvalidArgument, "weights ",
              o.action, ": --model is required");
  std::string layouts;
  bool layout_known = o.layout == "auto", to_known = false;
  for (const models::WeightLayout& l : models::weight_layouts()) {
    layouts += (layouts.empty() ? "" : ", ") + l.name;
    layout_known = layout_known || l.name == o.layout;
    to_known = to_known || l.name == o.to;
  }
  SLAPO_CHECK(layout_known, ErrorCode::kInvalidArgument, "--layout ", o.layout, ": unknown (auto, ",
              layouts, ")");
  SLAPO_CHECK(to_known, ErrorCode::kInvalidArgument, "--to ", o.to, ": unknown (", layouts, ")");
  return o;
}

int run_weights(const WeightsOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<WeightsOptions>(kWeightsUsage, declare);
    return kExitOk;
  }
  std::optional<models::ModelSpec> spec;
  if (!o.model.empty())
    spec = for_flag("--model", o.model, [&] { return models::model_preset(o.model); });
  models::LoadOptions load;
  load.layout = o.layout;

  if (o.action == "init") {
    auto model = models::build_model(*spec, o.seed);
    for_flag("--to", o.to, [&] { models::save_weights(*model, o.files[0], o.to, spec->family); });
    out << o.files[0] << ": the initial weights of " << o.model << " (seed " << o.seed
        << "), under the " << o.to << " layout's names\n";
    return kExitOk;
  }
  if (o.action == "convert") {
    auto model = models::build_model(*spec, o.seed);
    const models::LoadReport report = models::load_weights(*model, *spec, o.files[0], load);
    for_flag("--to", o.to, [&] { models::save_weights(*model, o.files[1], o.to, spec->family); });
    out << report.to_string() << "\n"
        << o.files[1] << ": saved under the " << o.to << " layout's names\n";
    return kExitOk;
  }
  const models::NamedTensors tensors = models::read_weights(o.files[0]);
  size_t width = 4;
  int64_t elements = 0;
  for (const auto& [name, t] : tensors) width = std::max(width, name.size());
  out << std::left << std::setw(static_cast<int>(width) + 2) << "name" << std::setw(10) << "dtype"
      << "shape\n";
  for (const auto& [name, t] : tensors) {
    out << std::setw(static_cast<int>(width) + 2) << name << std::setw(10)
        << c10::toString(t.scalar_type()) << shape_text(t) << "\n";
    elements += t.numel();
  }
  out << tensors.size() << " tensors, " << elements << " elements\n";
  if (spec) {
    // A dry run: loaded into a model that is thrown away, whatever the file lacks reported.
    auto model = models::build_model(*spec, 0);
    load.strict = false;
    const models::LoadReport report = models::load_weights(*model, *spec, o.files[0], load);
    out << report.to_string() << "\n";
    return report.missing.empty() && report.unexpected.empty() ? kExitOk : kExitFailure;
  }
  return kExitOk;
}

}  // namespace slapo::cli
