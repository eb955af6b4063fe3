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

constexpr const char* kTemplatesUsage =
    "usage: slapo-tune templates [list | show NAME | reference]\n"
    "\n"
    "Lists the schedule templates (the default: one per model family), prints the knobs one\n"
    "understands with their values, defaults and meaning, or prints every template's knob table\n"
    "as Markdown (the section of docs/schedule.md).\n";

}  // namespace

CatalogueOptions parse_templates(const Args& args) { return parse_catalogue(args, "templates"); }

int run_templates(const TemplatesOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << catalogue_help(kTemplatesUsage);
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
