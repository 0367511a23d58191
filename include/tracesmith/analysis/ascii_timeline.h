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

#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

struct AsciiTimelineOptions {
  uint64_t from = 0, to = 0;  // absolute ns; to <= from means the trace's window
  int width = 100;            // total characters per line, labels included
  bool host_rows = true;
};

std::string RenderAsciiTimeline(const CompactTrace& trace, const AsciiTimelineOptions& options);

struct AsciiTimelineFileOptions {
  AsciiTimelineOptions timeline;  // its from/to are not used: see below
  std::string from, to;           // durations from the trace start ("2ms"), as LoadOptions
};

// The same text for an SBT file, in bounded memory: the events are streamed
// two or three times (times and lanes; with --from/--to, the lanes with work
// in the window; the busy time per bucket) instead of being loaded into a
// CompactTrace, so memory is one chunk plus the rows' buckets. Same output
// as LoadCompactTrace(path, {from, to}) + RenderAsciiTimeline. `report`
// (optional) receives what the reader recovered from a damaged file.
Status RenderAsciiTimelineFile(const std::string& path, const AsciiTimelineFileOptions& options,
                               std::string* text, format::ReadReport* report = nullptr);
// The same from any source (a run merged on the fly: cluster/run_source.h).
Status RenderAsciiTimelineFile(format::TraceSource& source, const AsciiTimelineFileOptions& options,
                               std::string* text, format::ReadReport* report = nullptr);

}  // namespace tracesmith::analysis
