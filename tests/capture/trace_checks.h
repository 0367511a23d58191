// Helpers shared by the capture tests: counting and selecting rows of a trace.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

inline std::string_view Str(const model::Trace& t, uint32_t id) { return t.strings.Get(id); }

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
