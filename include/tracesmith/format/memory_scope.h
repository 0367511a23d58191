// MemoryScope: which device memory a replay capture snapshots for a launch
// (`--replay-memory`), stored in each launch record of the replay payload
// (replay_payload.h). Its own header so that capture options can name it
// without the payload's reader and writer.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tracesmith::format {

enum class MemoryScope : uint8_t {
  kUnknown = 0,    // written before the scope was recorded
  kParams = 1,     // only the allocations the parameters point into
  kReachable = 2,  // and, transitively, those pointers stored in memory point into
  kAll = 3,        // every live allocation the capture knew of
};
inline constexpr uint8_t kMaxMemoryScope = 3;
// "params", "reachable", "all", "unknown".
const char* MemoryScopeName(MemoryScope scope);
// The option's spelling ("params", "reachable", "all"); nullopt otherwise.
std::optional<MemoryScope> MemoryScopeFromName(std::string_view name);

}  // namespace tracesmith::format
