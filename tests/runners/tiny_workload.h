#pragma once
// The smallest built-in workload the runners' tests measure: gpt-tiny, 16 tokens, one thread.

#include <string>

#include "runners/workload.h"

namespace slapo::runners {

inline Workload tiny_test_workload(int steps) {
  return Workload::from_json(R"({"model": "gpt-tiny", "seq_len": 16, "warmup": 1, "steps": )" +
                                 std::to_string(steps) + R"(, "threads": 1})",
                             "test");
}

}  // namespace slapo::runners
