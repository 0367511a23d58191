#include "tracesmith/model/trace.h"

#include <algorithm>
#include <limits>

namespace tracesmith::model {

size_t Trace::EventCount() const {
  size_t n = 0;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) n += Rows<T>().size();
  });
  return n;
}

std::pair<uint64_t, uint64_t> Trace::TimeRange() const {
  uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      for (const T& e : Rows<T>()) {
        uint64_t s = EventStart(e);
        if (s == 0) continue;
        lo = std::min(lo, s);
        hi = std::max(hi, std::max(s, EventEnd(e)));
      }
    }
  });
  if (hi == 0) return {0, 0};
  return {lo, hi};
}

}  // namespace tracesmith::model
