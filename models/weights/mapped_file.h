#pragma once
// A checkpoint file mapped into memory copy-on-write, shared by the tensors that view it: the
// mapping lives until the last of them is gone, and writing to one changes neither the file nor
// the others. Internal to models/weights/.

#include <cstddef>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

namespace slapo::models {

struct MappedFile {
  void* base = nullptr;
  size_t size = 0;
  ~MappedFile();

  // Maps `path` whole. Throws Error(kNotFound) when it cannot be opened, Error(kInvalidArgument)
  // naming `what` ("safetensors weights") when it is not a regular file or cannot be mapped. An
  // empty file maps to size 0 and no base.
  static std::shared_ptr<MappedFile> open(const std::string& path, const std::string& what);

  // The `numel` elements of `dtype` at byte `offset`, as a 1-D tensor (or of `shape`) that keeps
  // the mapping alive. REQUIRES: the bytes lie inside the file (checked by the caller).
  static at::Tensor view(const std::shared_ptr<MappedFile>& file, size_t offset,
                         at::IntArrayRef shape, at::ScalarType dtype);
};

}  // namespace slapo::models
