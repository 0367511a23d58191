// Path text helpers (no file system access).
#pragma once

#include <string_view>

namespace tracesmith {

// The part of `path` after its last '/' (all of it without one).
inline std::string_view FileNameOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace tracesmith
