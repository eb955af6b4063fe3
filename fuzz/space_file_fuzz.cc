// libFuzzer target: the space-file loader and compiler must never crash, hang or read out of
// bounds, whatever the TOML; a bad file is an slapo::Error with a message. A space that compiles
// is counted, and a few of its configurations are drawn and read back.

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/rng.h"
#include "space/compiled_space.h"
#include "space/space_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const slapo::space::CompiledSpace space =
        slapo::space::CompiledSpace::compile(slapo::space::parse_space(text, "fuzz.toml"));
    if (space.size() == 0) return 0;
    slapo::Rng rng(1);
    for (int i = 0; i < 3; ++i) {
      const slapo::Config config = space.sample(rng);
      (void)space.contains(config);
      (void)space.neighbours(config);
    }
    (void)space.at(space.size() - 1);
  } catch (const slapo::Error&) {
    // Refusing a bad file with a message is the expected outcome.
  }
  return 0;
}
