// Helpers shared by the test suites.
#pragma once
#include <functional>
#include <string>

#include "engine/core/error.h"

namespace sa::testing {

// The message of the sa::Error that f throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace sa::testing
