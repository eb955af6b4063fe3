#pragma once
// Reading a file that a user names, bounded: the cap is checked while reading, so a path such as
// /dev/zero is refused without filling memory.

#include <cstddef>
#include <string>

namespace slapo {

// The contents of `path`. Error(kInvalidArgument) for a directory ("PATH: a directory where WHAT
// was expected") or a file over `max_bytes` ("PATH: larger than N MiB; HINT"), Error(kNotFound)
// when it cannot be opened ("PATH: cannot open WHAT").
std::string read_file_capped(const std::string& path, size_t max_bytes, const std::string& what,
                             const std::string& hint);

}  // namespace slapo
