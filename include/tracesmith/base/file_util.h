// Small file helpers used by the CLI and tests.
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/base/status.h"

namespace tracesmith {

// True when something (file, directory, device) is at `path` (stat succeeds).
bool PathExists(const std::string& path);
StatusOr<uint64_t> FileSize(const std::string& path);
StatusOr<std::string> ReadFileToString(const std::string& path);
Status WriteStringToFile(const std::string& path, const std::string& data);

// "1.23 MiB", "512 B"
std::string HumanBytes(uint64_t bytes);
// "12.345 ms", "1.200 s", "830 ns"
std::string HumanDuration(uint64_t ns);

}  // namespace tracesmith

namespace tracesmith {
// Parses "1500", "1.5us", "20ms", "2s", "300ns" into nanoseconds (plain numbers are ns).
StatusOr<uint64_t> ParseDuration(const std::string& text);
}  // namespace tracesmith
