// The statistics TraceSmith reports — medians and percentiles of durations,
// gaps and counts — all by one rule, the nearest rank: the q-quantile of n
// values is the ceil(q * n)-th smallest (the first for q = 0). Every figure is
// then a value that occurred (a real kernel's, step's or call's), never an
// average of two that did not; the median is the lower one for an even count
// (q = 0.5: the (n/2)-th smallest). Percentiles from histograms (the capture's
// capture-cost, capture/capture_cost.h) apply the same rule to bucket counts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tracesmith {

// The 0-based index of the q-quantile among n sorted values (0 when n is 0).
inline size_t NearestRankIndex(size_t n, double q) {
  if (n == 0 || !(q > 0)) return 0;
  if (q >= 1) return n - 1;
  const double rank = std::ceil(q * static_cast<double>(n));
  return std::min(n, std::max<size_t>(1, static_cast<size_t>(rank))) - 1;
}

// The q-quantile of `v` (reordered in place); T{} when empty.
template <typename T>
T NearestRank(std::span<T> v, double q) {
  if (v.empty()) return T{};
  const auto k = v.begin() + static_cast<std::ptrdiff_t>(NearestRankIndex(v.size(), q));
  std::nth_element(v.begin(), k, v.end());
  return *k;
}

// The q-quantile of a copy of `v`; T{} when empty.
template <typename T>
T Quantile(std::vector<T> v, double q) {
  return NearestRank(std::span<T>(v), q);
}

// "12.5%" of part/whole: 12.5 (0 when whole is 0).
inline double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * double(part) / double(whole) : 0.0;
}

// The median: the lower middle value for an even count; T{} when empty.
template <typename T>
T Median(std::vector<T> v) {
  return NearestRank(std::span<T>(v), 0.5);
}

}  // namespace tracesmith
