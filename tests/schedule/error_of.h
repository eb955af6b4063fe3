#pragma once
// The message of the slapo::Error that `fn` throws, or "" when it throws none.

#include <functional>
#include <string>

#include "core/error.h"

namespace slapo::schedule {

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace slapo::schedule
