// Trace: an in-memory trace — the string table plus one vector per record kind.
//
// This is what readers produce and what small tools, tests and importers
// build. Capture does not build a Trace: it streams rows to an SbtWriter.
#pragma once

#include <cstddef>
#include <tuple>
#include <vector>

#include "tracesmith/model/records.h"
#include "tracesmith/model/string_table.h"

namespace tracesmith::model {

class Trace {
 public:
  StringTable strings;

  template <typename T>
  std::vector<T>& Rows() {
    return std::get<std::vector<T>>(tables_);
  }
  template <typename T>
  const std::vector<T>& Rows() const {
    return std::get<std::vector<T>>(tables_);
  }

  // Number of event rows (all event kinds; metadata excluded).
  size_t EventCount() const;
  // Earliest start and latest end over all events; {0,0} when there are none.
  std::pair<uint64_t, uint64_t> TimeRange() const;

 private:
  // One vector per record type (records.h's RecordTypes), in its order.
  ApplyEach<std::tuple, std::vector, RecordTypes> tables_;
};

// Start and end of an event row (end == start for instantaneous kinds).
template <typename T>
uint64_t EventStart(const T& e) {
  if constexpr (requires { e.start_ns; })
    return e.start_ns;
  else
    return e.ts_ns;
}
template <typename T>
uint64_t EventEnd(const T& e) {
  if constexpr (requires { e.end_ns; })
    return e.end_ns;
  else
    return EventStart(e);
}

}  // namespace tracesmith::model
