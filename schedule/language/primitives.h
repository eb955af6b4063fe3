#pragma once
// The table of schedule primitives: each row names a primitive, its one-line summary, its full
// help, and how each form it records in a schedule's text (schedule/language/replay.h) is applied
// again. The table drives `slapo-tune primitives`, the primitive reference of docs/schedule.md (a
// test keeps them equal) and replay(). A new primitive: a Schedule method that records itself, and
// a row here.

#include <functional>
#include <string>
#include <vector>

#include "schedule/language/schedule.h"

namespace slapo::schedule {

class ArgReader;

// Makes the module of a recorded `replace` step: calls target.replace(...) for `type_name`.
// Throws Error(kInvalidArgument) for a type it cannot make.
using ReplaceFactory = std::function<void(Schedule& target, const std::string& type_name)>;

// One recorded step being replayed.
struct ReplayStep {
  const AppliedPrimitive& step;
  int index;                      // 1-based, for messages
  const ReplaceFactory& factory;  // may be empty
};

struct ReplayForm {
  std::string recorded;  // the primitive's name in schedule text: "fuse", "fuse_match", ...
  void (*apply)(Schedule& target, ArgReader& args, const ReplayStep& step);
};

struct Primitive {
  std::string name;
  std::string summary;            // one line
  std::string help;               // the full help: usage, what it does, what it requires, errors
  std::vector<ReplayForm> forms;  // empty for a query (find), which records nothing
};

// Every primitive, in the order of docs/schedule.md.
const std::vector<Primitive>& list_primitives();
// REQUIRES: a known name; otherwise Error(kNotFound) listing them.
const Primitive& find_primitive(const std::string& name);
// The form recorded as `recorded`, or null.
const ReplayForm* find_replay_form(const std::string& recorded);

// The primitive reference as Markdown: one section per primitive, its summary and its help.
std::string primitive_reference_markdown();

}  // namespace slapo::schedule
