#pragma once
// Small text utilities shared by error messages ("did you mean ...?").

#include <cstddef>
#include <string>

namespace slapo {

// Levenshtein distance: insertions, deletions and substitutions of one character each.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace slapo
