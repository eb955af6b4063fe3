// libFuzzer target: a configuration as `--config` and the database give it (JSON) must parse or
// be refused with an slapo::Error, never crash; what parses must survive its round trip and be
// checked against a space without crashing.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/config.h"
#include "core/error.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

namespace {
const slapo::space::CompiledSpace& space() {
  static const slapo::space::CompiledSpace compiled =
      slapo::space::CompiledSpace::compile(slapo::space::parse_space(R"(
[knobs]
batch_size = { pow2 = [1, 64] }
ratio = { values = [0.0, 0.5, 1.0] }
attn = { choice = ["naive", "fused"] }
flag = { values = [false, true] }
pp = { values = [1, 2] }
cuts = { layers = 8, stages = "pp" }
)",
                                                                     "fuzz.toml"));
  return compiled;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const slapo::Config config = slapo::Config::from_json(text, "fuzz");
    const slapo::Config again = slapo::Config::from_json(config.to_json(), "round trip");
    if (again.canonical_json() != config.canonical_json()) std::abort();
    (void)config.hash();
    (void)space().contains(config);
  } catch (const slapo::Error&) {
    // Refusing bad input with a message is the expected outcome.
  }
  return 0;
}
