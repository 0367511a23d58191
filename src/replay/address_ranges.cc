#include "tracesmith/replay/address_ranges.h"

#include <algorithm>

namespace tracesmith::replay {

std::vector<AddressRange> CoveringRanges(std::vector<AddressRange> ranges, uint64_t g) {
  std::vector<AddressRange> rounded;
  for (const AddressRange& r : ranges) {
    if (r.size == 0) continue;
    const uint64_t lo = r.address / g * g;
    const uint64_t hi = (r.address + r.size + g - 1) / g * g;
    rounded.push_back({lo, hi - lo});
  }
  std::sort(rounded.begin(), rounded.end(),
            [](const AddressRange& a, const AddressRange& b) { return a.address < b.address; });
  std::vector<AddressRange> out;
  for (const AddressRange& r : rounded) {
    if (!out.empty() && r.address <= out.back().address + out.back().size) {
      out.back().size =
          std::max(out.back().address + out.back().size, r.address + r.size) - out.back().address;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<ReservationGroup> GroupForReservation(const std::vector<AddressRange>& covering,
                                                  uint64_t alignment) {
  std::vector<ReservationGroup> out;
  for (const AddressRange& span : CoveringRanges(covering, alignment)) out.push_back({span, {}});
  size_t g = 0;
  for (const AddressRange& r : covering) {
    if (r.size == 0) continue;
    while (r.address >= out[g].span.address + out[g].span.size) ++g;  // spans cover every range
    out[g].ranges.push_back(r);
  }
  return out;
}

}  // namespace tracesmith::replay
