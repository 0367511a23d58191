// What a recorded launch's memory snapshots hold and why: how many ranges
// came from the parameters, which were reached through pointers stored in
// memory (and from where), and what the capture left out. The replay report
// prints it ("3 allocations reached through pointers in allocation #2 at
// offsets 0x0..0x78") and, when an output differs, says what may be missing.
// CPU only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay {

struct LaunchMemory {
  format::MemoryScope scope = format::MemoryScope::kUnknown;
  uint32_t ranges = 0;  // "before" snapshots
  uint64_t bytes = 0;
  uint32_t from_parameters = 0, reached = 0, requested = 0, live = 0;
  uint64_t reached_bytes = 0;
  // Allocations reached through pointers, grouped by the range holding the
  // pointers; `via` numbers the launch's ranges 1.. in address order.
  struct Group {
    uint32_t via = 0;
    uint64_t via_address = 0;
    uint32_t allocations = 0;
    uint64_t bytes = 0;
    uint64_t first_offset = 0, last_offset = 0;
    uint32_t depth = 0;  // the deepest of them (1: pointers in a parameter's allocation)
  };
  std::vector<Group> groups;
  format::MemoryCoverage coverage;  // what the capture left out
};

LaunchMemory DescribeLaunchMemory(const format::ReplayCapture& capture,
                                  const format::LaunchRecord& launch);

// The report's "memory:" lines (two-space indent, newline-terminated); empty
// for a capture that predates memory scopes and has nothing to say.
std::string FormatLaunchMemory(const LaunchMemory& m);
// For a launch whose output differs from the capture, or that faulted: what
// the capture may have missed and how to record it, one sentence without a
// newline (empty when nothing is known).
std::string MissingMemoryHint(const LaunchMemory& m);

// When the device memory of the replayed launches cannot be had (the
// mapping failed with CUDA_ERROR_OUT_OF_MEMORY): what was selected
// ("launch 4", "launches 0..59", "all 12 recorded launches"), what it needs
// at once (`needed_bytes` in `ranges` ranges), what the GPU had free
// (cuMemGetInfo) and what to do, one message for the error. `launch` and
// `range_first`/`range_last` as GpuReplayOptions has them; `launches` the
// number recorded (launches and graph launches).
std::string OutOfDeviceMemoryText(int64_t launch, int64_t range_first, int64_t range_last,
                                  size_t launches, size_t ranges, uint64_t needed_bytes,
                                  uint64_t free_bytes, uint64_t total_bytes);

}  // namespace tracesmith::replay
