#include "schedule/runtime/rng_stream.h"

#include <mutex>

#include <ATen/CPUGeneratorImpl.h>

namespace slapo::schedule {

at::Tensor default_rng_state() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_default_rng_state(const at::Tensor& state) {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

RngStream::RngStream(uint64_t seed) : seed_(seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::lock_guard<std::mutex> lock(gen.mutex());
  state_ = gen.get_state();
}

RngStream::Swap::Swap(RngStream* s) : stream(s), outer(default_rng_state()) {
  set_default_rng_state(stream->state_);
}

RngStream::Swap::~Swap() {
  stream->state_ = default_rng_state();
  set_default_rng_state(outer);
}

}  // namespace slapo::schedule
