#pragma once
// Reading space files (TOML). The syntax is documented in docs/space-files.md:
//
//   [workload]     opaque; handed to the runner as JSON
//   [parameters]   name = number | string | bool
//   [knobs]        name = { range = [lo, hi], step = s } | { pow2 = [lo, hi] } | { values = [...] }
//                        | { choice = ["a", "b"] } | { values = [false, true] }
//                        | { layers = "L", stages = "pp", min = 4, max = 8 }     (cut points)
//                  optional on every knob: mem = "up" | "down"
//   [constraints]  name = "expression" | ["expression", ...]
//   [space]        order = ["knob", ...]   (loop order; default: file order)

#include <cstddef>
#include <string>

#include "space/space.h"

namespace slapo::space {

// The largest space file read (a real one is a few kilobytes).
inline constexpr size_t kMaxSpaceFileBytes = 16 << 20;
// The most knobs and constraints a space may declare. Compiling is near-linear in both (10,000 of
// each: ~0.13 s, benchmark/space_bench.cc BM_Wide_ParseAndCompile); past these it is refused.
inline constexpr size_t kMaxKnobs = 100'000;
inline constexpr size_t kMaxConstraints = 100'000;

// Throws Error(kNotFound) when the file cannot be read, Error(kInvalidArgument) for a directory or
// a file over kMaxSpaceFileBytes (checked while reading), Error(kParse) with file:line:column for
// TOML syntax errors, unknown tables or keys, and values of the wrong kind; Error(kInvalidArgument)
// past kMaxKnobs or kMaxConstraints.
Space load_space_file(const std::string& path);
Space parse_space(const std::string& text, const std::string& origin);

}  // namespace slapo::space
