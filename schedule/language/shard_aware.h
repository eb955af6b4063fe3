#pragma once
// ShardAware: a module that must know when one of its tensors is sharded, because its forward
// depends on which slice it holds (a vocabulary-parallel embedding looks up only its own rows and
// must know their offset). shard() calls on_shard after narrowing the tensor.

#include <cstdint>
#include <string>

namespace slapo::schedule {

class ShardAware {
 public:
  virtual ~ShardAware() = default;
  // `name` (a parameter or buffer of this module) now holds slice `rank` of `parts` along `axis`.
  virtual void on_shard(const std::string& name, int64_t axis, int64_t parts, int64_t rank) = 0;
};

}  // namespace slapo::schedule
