// An ASCII timeline: one row per GPU stream (and per host thread with API
// calls), one character per time bucket, so a trace can be looked at in a
// terminal or a CI log.
//
//   K / k   a kernel runs for >= half / part of the bucket
//   M / m   a memcpy or memset (when it covers more of the bucket than kernels)
//   A / a   host rows: inside CUDA API calls
//   .       idle
#pragma once

#include <cstdint>
#include <string>

#include "tracesmith/analysis/compact_trace.h"

namespace tracesmith::analysis {

struct AsciiTimelineOptions {
  uint64_t from = 0, to = 0;  // absolute ns; to <= from means the trace's window
  int width = 100;            // total characters per line, labels included
  bool host_rows = true;
};

std::string RenderAsciiTimeline(const CompactTrace& trace, const AsciiTimelineOptions& options);

}  // namespace tracesmith::analysis
