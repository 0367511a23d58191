// Helpers shared by the capture tests: counting and selecting rows of a trace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/model/stack_builder.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

inline std::string_view Str(const model::Trace& t, uint32_t id) { return t.strings.Get(id); }

// The frames of a stack as "function" (native) or "function file:line"
// (Python) strings, leaf first; "?" for a frame without a name.
inline std::vector<std::string> Describe(const model::Trace& t, uint32_t stack_id) {
  std::vector<std::string> out;
  const auto& frames = t.Rows<model::Frame>();
  for (uint32_t id : model::StackFrames(t, stack_id)) {
    if (id == 0 || id > frames.size()) {
      out.push_back("<bad frame id>");
      continue;
    }
    const model::Frame& f = frames[id - 1];
    std::string s(Str(t, f.function_id));
    if (f.kind == model::kFramePython)
      s += " " + std::string(Str(t, f.file_id)) + ":" + std::to_string(f.line);
    out.push_back(s.empty() ? "?" : s);
  }
  return out;
}

inline std::vector<model::KernelEvent> KernelsNamed(const model::Trace& t, std::string_view part) {
  std::vector<model::KernelEvent> out;
  for (const auto& k : t.Rows<model::KernelEvent>())
    if (Str(t, k.name_id).find(part) != std::string_view::npos) out.push_back(k);
  return out;
}

inline std::vector<model::ApiEvent> ApisNamed(const model::Trace& t, std::string_view name) {
  std::vector<model::ApiEvent> out;
  for (const auto& a : t.Rows<model::ApiEvent>())
    if (Str(t, a.name_id) == name) out.push_back(a);
  return out;
}

inline const model::NvtxRangeEvent* RangeNamed(const model::Trace& t, std::string_view name) {
  for (const auto& r : t.Rows<model::NvtxRangeEvent>())
    if (Str(t, r.name_id) == name) return &r;
  return nullptr;
}

}  // namespace tracesmith::testing
