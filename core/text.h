#pragma once
// Small text utilities: error messages ("did you mean ...?"), a child's last output line, a
// duration, a size in bytes.

#include <cstddef>
#include <string>

namespace slapo {

// Levenshtein distance: insertions, deletions and substitutions of one character each.
size_t edit_distance(const std::string& a, const std::string& b);

// The last non-empty line of `text`, without the newlines and spaces that end it; empty when
// there is none.
std::string last_line(const std::string& text);
// `text` up to its first newline: a LibTorch error's message without the C++ trace it appends.
std::string first_line(const std::string& text);

// Whether `s` ends with `suffix`.
bool ends_with(const std::string& s, const std::string& suffix);

// `word` as one word of a POSIX shell command line: as is when it holds only characters no shell
// treats specially, else in single quotes (a quote inside written '\'').
std::string shell_quote(const std::string& word);

// A duration for a message: "0.47 s" under a second, "3.2 s" under ten, "42 s" above (a profile
// of a tiny model takes half a second: rounded to whole seconds it read "in 0 s").
std::string seconds_text(double seconds);

// A size in human units: "512.0 MiB", "1.30 GiB".
std::string format_bytes(double bytes);

}  // namespace slapo
