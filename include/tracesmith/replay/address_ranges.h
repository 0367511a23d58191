// Device address ranges a replay must map: captured ranges rounded out to
// the VMM allocation granularity and merged. CPU-only (unit-tested).
#pragma once

#include <cstdint>
#include <vector>

namespace tracesmith::replay {

struct AddressRange {
  uint64_t address = 0, size = 0;
};

// Rounds each range out to multiples of `granularity` (> 0), drops empty
// ones, merges overlapping or touching results; sorted by address.
std::vector<AddressRange> CoveringRanges(std::vector<AddressRange> ranges, uint64_t granularity);

}  // namespace tracesmith::replay
