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

// One device VA reservation holding several covering ranges.
struct ReservationGroup {
  AddressRange span;                 // what to reserve
  std::vector<AddressRange> ranges;  // what to back with memory, sorted, inside span
};

// Groups sorted, disjoint ranges (CoveringRanges' output) by the
// `alignment`-aligned spans that hold them (CoveringRanges(covering,
// alignment)). Same-address replay reserves such spans because the CUDA
// driver rounds an address hint outside its own regions up to its VA chunk
// size (32 MiB, measured: docs/replay-format.md); a hint on a chunk
// boundary is honoured when the range is free.
std::vector<ReservationGroup> GroupForReservation(const std::vector<AddressRange>& covering,
                                                  uint64_t alignment);

}  // namespace tracesmith::replay
