#pragma once
// The dropout key of this thread: which step and which global samples the forwards in an open
// DropoutScope cover (runtime/keyed_dropout.h says why masks are keyed). The kernels that draw
// keyed masks (kernels/keyed_mask.h) read it; the trainer and checkpointing set it.

#include <cstdint>

namespace slapo::schedule {

struct DropoutKey {
  bool active = false;  // false: no scope is open
  uint64_t step = 0;
  int64_t sample_offset = 0;  // the global index of the batch's first sample
};

// The key of the innermost open scope on this thread.
DropoutKey current_dropout_key();
// A step number no scope and no other fresh key uses, for forwards outside any scope.
DropoutKey fresh_dropout_key();

// Which step and which global samples the forwards in this scope cover. Nested scopes restore the
// outer one.
class DropoutScope {
 public:
  DropoutScope(uint64_t step, int64_t sample_offset)
      : DropoutScope(DropoutKey{true, step, sample_offset}) {}
  explicit DropoutScope(DropoutKey key);
  ~DropoutScope();
  DropoutScope(const DropoutScope&) = delete;
  DropoutScope& operator=(const DropoutScope&) = delete;

 private:
  DropoutKey outer_;
};

}  // namespace slapo::schedule
