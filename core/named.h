#pragma once
// Looking a name up in a table (strategies, templates, families, primitives): the entry, or one
// error that lists every name the table has.

#include <string>
#include <vector>

#include "core/error.h"

namespace slapo {

// The entry of `table` whose `name` is `name`. Otherwise throws Error(`code`):
// "unknown <what> '<name>' (<plural>: a, b, c)".
template <typename Entry>
const Entry& find_named(const std::vector<Entry>& table, const std::string& name, const char* what,
                        const char* plural, ErrorCode code = ErrorCode::kInvalidArgument) {
  std::string names;
  for (const Entry& entry : table) {
    if (entry.name == name) return entry;
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  SLAPO_FAIL(code, "unknown ", what, " '", name, "' (", plural, ": ", names, ")");
}

}  // namespace slapo
