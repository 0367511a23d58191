// StackMode: which host call stacks a capture takes (`--stacks`). Its own
// header, without the collector, so that capture options (built everywhere,
// also into the CLI) parse it once into the enum.
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/base/status.h"

namespace tracesmith::stacks {

enum class StackMode : uint8_t { kNone, kNative, kPython, kMixed, kFull };

// Parses "none|native|python|mixed|full".
inline StatusOr<StackMode> ParseStackMode(const std::string& s) {
  if (s == "none") return StackMode::kNone;
  if (s == "native") return StackMode::kNative;
  if (s == "python") return StackMode::kPython;
  if (s == "mixed") return StackMode::kMixed;
  if (s == "full") return StackMode::kFull;
  return InvalidArgument(
      StrFormat("--stacks=%s: expected one of none, native, python, mixed, full", s.c_str()));
}

inline const char* StackModeName(StackMode mode) {
  switch (mode) {
    case StackMode::kNone:
      return "none";
    case StackMode::kNative:
      return "native";
    case StackMode::kPython:
      return "python";
    case StackMode::kMixed:
      return "mixed";
    case StackMode::kFull:
      return "full";
  }
  return "?";
}

}  // namespace tracesmith::stacks
