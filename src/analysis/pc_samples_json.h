// The JSON of GPU instruction samples' stall reasons, lines and launching code, one
// shape wherever they appear (`analyze --json`'s gpu_samples, `kernel --json`),
// and of their diff (`diff --json`).
#pragma once

#include <string_view>
#include <vector>

#include "tracesmith/analysis/json_writer.h"
#include "tracesmith/analysis/pc_diff.h"
#include "tracesmith/analysis/sass_counts.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

// "counts": a counted function's totals and opcode histogram (--sass-counts;
// `kernel --json`, `analyze --json`'s sass_counts).
inline void CountsJson(JsonWriter& j, const FunctionCounts& c) {
  j.BeginObject("counts")
      .UInt("executed", c.executed)
      .UInt("thread_executed", c.thread_executed)
      .UInt("instructions", c.instructions);
  j.BeginArray("opcodes");
  for (const OpcodeCount& o : c.opcodes)
    j.BeginObject()
        .Str("opcode", o.opcode)
        .UInt("executed", o.executed)
        .UInt("thread_executed", o.thread_executed)
        .UInt("instructions", o.instructions)
        .Num("share_pct", o.share)
        .EndObject();
  j.EndArray().EndObject();
}

inline void StallsJson(JsonWriter& j, std::string_view key, const std::vector<StallShare>& v) {
  j.BeginArray(key);
  for (const StallShare& x : v)
    j.BeginObject()
        .Str("reason", x.reason)
        .Str("short_name", model::ShortStallName(x.reason))
        .Str("description", StallDescription(x.reason))
        .UInt("samples", x.samples)
        .UInt("not_issued_samples", x.not_issued)
        .Num("share_pct", x.share)
        .EndObject();
  j.EndArray();
}

inline void LinesJson(JsonWriter& j, std::string_view key, const std::vector<LineShare>& v) {
  j.BeginArray(key);
  for (const LineShare& x : v)
    j.BeginObject()
        .Str("file", x.file)
        .UInt("line", x.line)
        .UInt("samples", x.samples)
        .Num("share_pct", x.share)
        .EndObject();
  j.EndArray();
}

inline void SitesJson(JsonWriter& j, std::string_view key, const std::vector<SiteShare>& v) {
  j.BeginArray(key);
  for (const SiteShare& x : v)
    j.BeginObject()
        .Str("site", x.site)
        .UInt("samples", x.samples)
        .Num("share_pct", x.share)
        .UInt("launches", x.launches)
        .UInt("kernel_ns", x.kernel_ns)
        .EndObject();
  j.EndArray();
}

// `diff --json`'s "gpu_samples" (pc_diff.cc).
void PcSampleDiffJson(JsonWriter& j, const PcSampleDiff& d);

}  // namespace tracesmith::analysis
