// The median the analyses report: the lower of the two middle values for an
// even count (a value that occurred, never an average of two).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tracesmith {

// T{} when `v` is empty.
template <typename T>
T LowerMedian(std::vector<T> v) {
  if (v.empty()) return T{};
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace tracesmith
