#include "models/weights/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/weights/mapped_file.h"

namespace slapo::models {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

// The dtypes of the format, by their names in the header.
const std::vector<std::pair<const char*, at::ScalarType>>& dtypes() {
  static const std::vector<std::pair<const char*, at::ScalarType>> table = {
      {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
      {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
      {"U8", at::kByte},    {"BOOL", at::kBool}};
  return table;
}

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const std::shared_ptr<MappedFile> mapping = MappedFile::open(path, "safetensors weights");
  const auto* bytes = static_cast<const unsigned char*>(mapping->base);
  SLAPO_CHECK(mapping->size >= 8, ErrorCode::kInvalidArgument, path, ": ", mapping->size,
              " bytes, too short for a safetensors header");
  const uint64_t header_bytes = read_le64(bytes);
  SLAPO_CHECK(header_bytes <= mapping->size - 8 && header_bytes <= kMaxHeaderBytes,
              ErrorCode::kInvalidArgument, path, ": the safetensors header claims ", header_bytes,
              " bytes, beyond the file (", mapping->size, " bytes) or 100 MiB");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_bytes);
  } catch (const nlohmann::json::exception& e) {
    SLAPO_FAIL(ErrorCode::kInvalidArgument, path, ": the safetensors header is not JSON (",
               e.what(), ")");
  }
  SLAPO_CHECK(header.is_object(), ErrorCode::kInvalidArgument, path,
              ": the safetensors header is not a JSON object");
  const uint64_t data_begin = 8 + header_bytes;
  const uint64_t data_bytes = mapping->size - data_begin;

  SafetensorsFile file;
  std::vector<std::pair<uint64_t, std::pair<std::string, at::Tensor>>> by_offset;
  for (const auto& [name, entry] : header.items()) {
    const std::string where = path + ": tensor '" + name + "'";
    if (name == "__metadata__") {
      SLAPO_CHECK(entry.is_object(), ErrorCode::kInvalidArgument, path,
                  ": __metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        SLAPO_CHECK(value.is_string(), ErrorCode::kInvalidArgument, path, ": __metadata__ '", key,
                    "' is not a string");
        file.metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    SLAPO_CHECK(entry.is_object() && entry.contains("dtype") && entry["dtype"].is_string() &&
                    entry.contains("shape") && entry["shape"].is_array() &&
                    entry.contains("data_offsets") && entry["data_offsets"].is_array() &&
                    entry["data_offsets"].size() == 2,
                ErrorCode::kInvalidArgument, where,
                ": expected {\"dtype\": .., \"shape\": [..], \"data_offsets\": [begin, end]}");
    const std::string dtype_name = entry["dtype"].get<std::string>();
    const auto dtype = std::find_if(dtypes().begin(), dtypes().end(),
                                    [&](const auto& d) { return dtype_name == d.first; });
    SLAPO_CHECK(dtype != dtypes().end(), ErrorCode::kInvalidArgument, where, ": dtype '",
                dtype_name,
                "' is not one slapo reads (F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const auto& d : entry["shape"]) {
      SLAPO_CHECK(d.is_number_unsigned() && d.get<uint64_t>() < (1ull << 48),
                  ErrorCode::kInvalidArgument, where, ": shape ", entry["shape"].dump(),
                  " is not a list of sizes");
      shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      SLAPO_CHECK(d.get<uint64_t>() == 0 || numel <= (1ull << 48) / d.get<uint64_t>(),
                  ErrorCode::kInvalidArgument, where, ": shape ", entry["shape"].dump(),
                  " is too large");
      numel *= d.get<uint64_t>();
    }
    const auto& offsets = entry["data_offsets"];
    SLAPO_CHECK(offsets[0].is_number_unsigned() && offsets[1].is_number_unsigned(),
                ErrorCode::kInvalidArgument, where, ": data_offsets are not byte offsets");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    const uint64_t item = at::elementSize(dtype->second);
    SLAPO_CHECK(begin <= end && end <= data_bytes, ErrorCode::kInvalidArgument, where,
                ": data_offsets [", begin, ", ", end, "] are outside the file's ", data_bytes,
                " bytes of data");
    SLAPO_CHECK(end - begin == numel * item, ErrorCode::kInvalidArgument, where, ": ", end - begin,
                " bytes of data for shape ", entry["shape"].dump(), " of ", dtype_name, " (",
                numel * item, " expected)");
    at::Tensor t = MappedFile::view(mapping, data_begin + begin, shape, dtype->second);
    by_offset.push_back({begin, {name, std::move(t)}});
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [offset, named] : by_offset) file.tensors_.push_back(std::move(named));
  return file;
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::vector<at::Tensor> contiguous;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    SLAPO_CHECK(name != "__metadata__" && names.insert(name).second, ErrorCode::kInvalidArgument,
                path, ": tensor name '", name, "' is reserved or repeated");
    SLAPO_CHECK(tensor.defined() && tensor.device().is_cpu(), ErrorCode::kInvalidArgument, path,
                ": tensor '", name, "' is not a defined CPU tensor");
    const auto dtype = std::find_if(dtypes().begin(), dtypes().end(), [&](const auto& d) {
      return d.second == tensor.scalar_type();
    });
    SLAPO_CHECK(dtype != dtypes().end(), ErrorCode::kInvalidArgument, path, ": tensor '", name,
                "' has dtype ", tensor.scalar_type(), ", which safetensors cannot hold");
    contiguous.push_back(tensor.detach().contiguous());
    const uint64_t bytes = contiguous.back().nbytes();
    header[name] = {{"dtype", dtype->first},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts aligned
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  SLAPO_CHECK(out.good(), ErrorCode::kInvalidArgument, path, ": cannot write the weights");
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(text.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const at::Tensor& t : contiguous)
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  out.flush();
  SLAPO_CHECK(out.good(), ErrorCode::kInvalidArgument, path, ": writing the weights failed (",
              std::strerror(errno), ")");
}

}  // namespace slapo::models
