// slapo-tune primitives [list | show NAME]: the schedule primitives, from their table.

#include <ostream>

#include "cli/commands.h"
#include "core/error.h"
#include "schedule/language/primitives.h"

namespace slapo::cli {

namespace {

constexpr const char* kPrimitivesUsage =
    "usage: slapo-tune primitives [list | show NAME | reference]\n"
    "\n"
    "Lists the schedule primitives (the default), prints one's full help, or prints the whole\n"
    "reference as Markdown (the section of docs/schedule.md).\n";

}  // namespace

CatalogueOptions parse_primitives(const Args& args) { return parse_catalogue(args, "primitives"); }

int run_primitives(const PrimitivesOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << catalogue_help(kPrimitivesUsage);
    return kExitOk;
  }
  if (o.action == "show") {
    const schedule::Primitive& p = schedule::find_primitive(o.name);
    out << p.name << ": " << p.summary << "\n\n" << p.help << "\n";
    return kExitOk;
  }
  if (o.action == "reference") {
    out << schedule::primitive_reference_markdown();
    return kExitOk;
  }
  for (const schedule::Primitive& p : schedule::list_primitives()) {
    std::string name = p.name;
    name.resize(20, ' ');
    out << name << p.summary << "\n";
  }
  return kExitOk;
}

}  // namespace slapo::cli
