#include "schedule/kernels/dropout_key.h"

#include <atomic>

namespace slapo::schedule {

namespace {

thread_local DropoutKey scope;
// Fresh keys count down from the top, far from any step a trainer will reach.
std::atomic<uint64_t> fresh_steps{~uint64_t{0}};

}  // namespace

DropoutKey current_dropout_key() { return scope; }
DropoutKey fresh_dropout_key() { return DropoutKey{true, fresh_steps.fetch_sub(1), 0}; }

DropoutScope::DropoutScope(DropoutKey key) : outer_(scope) { scope = key; }
DropoutScope::~DropoutScope() { scope = outer_; }

}  // namespace slapo::schedule
