#include "core/read_file.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace slapo {

std::string read_file_capped(const std::string& path, size_t max_bytes, const std::string& what,
                             const std::string& hint) {
  std::error_code ec;
  SLAPO_CHECK(!std::filesystem::is_directory(path, ec), ErrorCode::kInvalidArgument, path,
              ": a directory where ", what, " was expected");
  std::ifstream in(path, std::ios::binary);
  SLAPO_CHECK(in.good(), ErrorCode::kNotFound, path, ": cannot open ", what);
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    SLAPO_CHECK(text.size() <= max_bytes, ErrorCode::kInvalidArgument, path, ": larger than ",
                max_bytes >> 20, " MiB; ", hint);
  }
  return text;
}

}  // namespace slapo
