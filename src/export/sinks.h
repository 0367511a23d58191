// Factories of the exporters (one .cc per format). The driver in export.cc
// owns the OutputFile and closes it after Finish.
#pragma once

#include <memory>
#include <string>

#include "event_sink.h"
#include "output_file.h"

namespace tracesmith::exporter {

std::unique_ptr<EventSink> MakePerfettoSink(OutputFile* out);
std::unique_ptr<EventSink> MakeJsonSink(OutputFile* out);
std::unique_ptr<EventSink> MakeCsvSink(OutputFile* out);
// SQLite writes its own file (no OutputFile): `path` is the temporary file
// that export.cc renames into place.
std::unique_ptr<EventSink> MakeSqliteSink(const std::string& path);

// Shared helpers of the GPU-op exporters.
// Bytes per nanosecond == GB/s (decimal), the unit Kineto and nsys print.
inline double BandwidthGBps(uint64_t bytes, uint64_t start, uint64_t end) {
  return end > start ? static_cast<double>(bytes) / static_cast<double>(end - start) : 0.0;
}

}  // namespace tracesmith::exporter
