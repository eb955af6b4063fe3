// slapo-tune templates [list | show NAME | reference]: the schedule templates and the knobs each
// understands, from the knob table (models/template_knobs.h).

#include <iomanip>
#include <ostream>

#include "cli/commands.h"
#include "core/error.h"
#include "models/template_knobs.h"
#include "models/templates.h"

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
    "usage: slapo-tune templates [list | show NAME | reference]\n"
    "\n"
    "Lists the schedule templates (the default: one per model family), prints the knobs one\n"
    "understands with their values, defaults and meaning, or prints every template's knob table\n"
    "as Markdown (the section of docs/schedule.md).\n";

void declare(TemplatesOptions* o, OptionSet& set) {
  set.hidden.add_options()("action", po::value<std::string>(&o->action))(
      "name", po::value<std::string>(&o->name));
  set.positional.add("action", 1).add("name", 1);
}

}  // namespace

TemplatesOptions parse_templates(const Args& args) {
  TemplatesOptions o = parse_options<TemplatesOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(o.action == "list" || o.action == "show" || o.action == "reference",
              ErrorCode::kInvalidArgument, "templates: unknown action '", o.action,
              "' (expected list, show NAME or reference)");
  SLAPO_CHECK(o.action != "show" || !o.name.empty(), ErrorCode::kInvalidArgument,
              "templates show: missing NAME");
  SLAPO_CHECK(o.action == "show" || o.name.empty(), ErrorCode::kInvalidArgument, "templates ",
              o.action, ": takes no NAME");
  return o;
}

int run_templates(const TemplatesOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<TemplatesOptions>(kUsage, declare);
    return kExitOk;
  }
  if (o.action == "reference") {
    for (const models::TemplateInfo& t : models::schedule_templates()) {
      const models::FamilyTraits& family = models::family_traits(t.family);
      out << "#### Template `" << t.name << "` (" << family.description << ")\n\n"
          << models::knob_reference_markdown(family) << "\n";
    }
    return kExitOk;
  }
  if (o.action == "show") {
    const models::TemplateInfo& t = models::find_template(o.name);
    out << "template " << t.name << " (" << models::family_traits(t.family).description << ")\n\n";
    for (const std::string& name : t.knobs) {
      const models::TemplateKnob& k = *models::find_template_knob(name);
      out << "  " << std::left << std::setw(22) << k.name << k.values_text() << " (default "
          << k.default_text << ")" << (k.runner ? ", read by the runner" : "") << "\n"
          << "  " << std::setw(22) << "" << k.help << "\n";
    }
    return kExitOk;
  }
  for (const models::TemplateInfo& t : models::schedule_templates()) {
    out << std::left << std::setw(8) << t.name << models::family_traits(t.family).description
        << "\n";
  }
  return kExitOk;
}

}  // namespace slapo::cli
