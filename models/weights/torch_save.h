#pragma once
// Files written by PyTorch's torch.save (the zip format of PyTorch ≥ 1.6): a state dict read
// without Python. LibTorch's own unpickler does not read them (it turns the state dict's
// OrderedDict into None), so this is a small pickle machine of its own that knows only what a
// state dict is made of — dicts, lists, tuples, strings, numbers, tensors and their storages — and
// calls nothing: a global it does not know becomes an opaque value, never code that runs. Tensors
// are views of the memory-mapped file (torch.save stores records uncompressed).

#include <string>

#include "models/weights/safetensors.h"

namespace slapo::models {

// The tensors of the state dict in `path`, in the dict's order. A checkpoint whose top level is a
// dict holding the state dict under "state_dict" or "model" (as training scripts save it) is read
// through that key. Throws Error(kNotFound) when it cannot be opened, Error(kInvalidArgument)
// naming the path and what is wrong (not a zip written by torch.save, an opcode or storage type
// it does not know, no dict of tensors).
NamedTensors read_torch_save(const std::string& path);

// Writes `tensors` to `path` as torch.save writes a state dict (Python's torch.load reads it as a
// dict of tensors).
void write_torch_save(const std::string& path, const NamedTensors& tensors);

}  // namespace slapo::models
