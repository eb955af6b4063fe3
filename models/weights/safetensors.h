#pragma once
// Safetensors, the weight format the Hugging Face hub ships: an 8-byte little-endian header length
// N, N bytes of JSON ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {..}}), then the tensors' raw little-endian bytes, offsets relative to the end of
// the header. Parsed here directly (no Python, no Rust): the file is memory-mapped and each tensor
// is a view of the mapping, so opening a 500 MB checkpoint reads only its header.

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace slapo::models {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class SafetensorsFile {
 public:
  // Maps `path` and checks its header: a size within the file (and under 100 MiB), valid JSON, a
  // known dtype, a shape and offsets per tensor that agree with each other and with the file.
  // Throws Error(kNotFound) when it cannot be opened, Error(kInvalidArgument) naming the path and
  // the entry otherwise.
  static SafetensorsFile open(const std::string& path);

  // The tensors in the order of their offsets; each a view of the mapping (copy-on-write: writing
  // to one changes neither the file nor the others), which it keeps alive — also after this
  // object is gone (a copy, so that `open(p).tensors()` is safe).
  NamedTensors tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  NamedTensors tensors_;
  std::map<std::string, std::string> metadata_;
};

// Writes `tensors` (CPU, any strides; names unique) to `path` as safetensors, the header padded to
// a multiple of 8 bytes, `metadata` under "__metadata__". Throws Error naming the path and tensor.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace slapo::models
