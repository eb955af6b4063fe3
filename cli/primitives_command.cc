// slapo-tune primitives [list | show NAME]: the schedule primitives, from their table.

#include <ostream>

#include "cli/commands.h"
#include "core/error.h"
#include "schedule/primitives.h"

namespace slapo::cli {

namespace {

constexpr const char* kUsage =
    "usage: slapo-tune primitives [list | show NAME | reference]\n"
    "\n"
    "Lists the schedule primitives (the default), prints one's full help, or prints the whole\n"
    "reference as Markdown (the section of docs/schedule.md).\n";

void declare(PrimitivesOptions* o, OptionSet& set) {
  set.hidden.add_options()("action", po::value<std::string>(&o->action))(
      "name", po::value<std::string>(&o->name));
  set.positional.add("action", 1).add("name", 1);
}

}  // namespace

PrimitivesOptions parse_primitives(const Args& args) {
  PrimitivesOptions o = parse_options<PrimitivesOptions>(args, declare);
  if (o.help) return o;
  SLAPO_CHECK(o.action == "list" || o.action == "show" || o.action == "reference",
              ErrorCode::kInvalidArgument, "primitives: unknown action '", o.action,
              "' (expected list, show NAME or reference)");
  SLAPO_CHECK(o.action != "show" || !o.name.empty(), ErrorCode::kInvalidArgument,
              "primitives show: missing NAME");
  SLAPO_CHECK(o.action == "show" || o.name.empty(), ErrorCode::kInvalidArgument, "primitives ",
              o.action, ": takes no NAME");
  return o;
}

int run_primitives(const PrimitivesOptions& o, std::ostream& out, std::ostream& err) {
  if (o.help) {
    out << help_text<PrimitivesOptions>(kUsage, declare);
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
