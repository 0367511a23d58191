// A structural checker for Perfetto traces, independent of the exporter's
// code: it decodes the wire format itself and verifies what trace processor
// relies on:
// - every track uuid an event uses was described by a TrackDescriptor earlier
//   in the file, and every parent_uuid was described before its child;
// - SLICE_BEGIN/SLICE_END nest per track (no END without an open BEGIN, no
//   BEGIN left open at the end, END never before its BEGIN);
// - timestamps never go backwards within a packet sequence (resolving the
//   sequence's incremental clock);
// - every flow id has a source (flow_ids) and a terminator;
// - every interned id (event names, annotation names and string values,
//   callstacks, frames, function names) resolves within its sequence, and
//   incremental state was cleared before the sequence used it.
// It also returns what it saw, so tests can compare content with the input.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tracesmith::testing {

struct PerfettoSlice {
  uint64_t track = 0;
  uint64_t start = 0, end = 0;
  std::string name;
  std::map<std::string, std::string> args;  // annotation name -> value as text
  int depth = 0;
  size_t callstack_frames = 0;  // frames of the interned callstack, 0 if none
  std::string leaf_function;    // function name of the callstack's leaf frame
};

struct PerfettoCheck {
  std::vector<std::string> errors;  // empty when the trace is valid
  std::vector<PerfettoSlice> slices;
  std::map<uint64_t, std::string> track_names;  // uuid -> name (thread/process names too)
  std::map<uint64_t, uint64_t> track_parents;
  uint64_t packets = 0, flows = 0, counters = 0, instants = 0;
  std::map<std::string, std::vector<double>> counter_values;  // track name -> values
  struct CounterSample {
    uint64_t ts = 0;
    double value = 0;
  };
  std::map<uint64_t, std::vector<CounterSample>> counter_samples;  // track uuid -> samples
  std::map<uint64_t, int64_t> process_pids;                        // process track uuid -> pid
  bool ok() const { return errors.empty(); }
  std::string Summary() const;  // first errors, for test failure messages
};

PerfettoCheck CheckPerfettoTrace(const std::string& bytes);

}  // namespace tracesmith::testing
