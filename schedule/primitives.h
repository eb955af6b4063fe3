#pragma once
// The catalogue of schedule primitives, for list_primitives() and `slapo-tune primitives`.

#include <string>
#include <vector>

namespace slapo::schedule {

struct PrimitiveDoc {
  std::string name;
  std::string summary;  // one line
  std::string help;     // the full help: usage, what it does, what it requires, errors
};

// Every primitive, in the order of docs/schedule.md.
const std::vector<PrimitiveDoc>& list_primitives();
// REQUIRES: a known name; otherwise Error(kNotFound) listing them.
const PrimitiveDoc& find_primitive(const std::string& name);

}  // namespace slapo::schedule
