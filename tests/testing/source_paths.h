// Paths into the source tree for tests run by ctest (TS_SOURCE_DIR is set for
// every ts_test binary; "." when a binary is run by hand from the checkout).
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace tracesmith::testing {

inline std::string TestSourceDir() {
  const char* src = std::getenv("TS_SOURCE_DIR");
  return src ? src : ".";
}

// A real trace shipped in examples/traces/ ("transformer_train.sbt").
inline std::string ExampleTracePath(std::string_view name) {
  return TestSourceDir() + "/examples/traces/" + std::string(name);
}

}  // namespace tracesmith::testing
