// Instruction profiles of sampled functions (pc_samples.h), for the GPU
// frames of flame graphs.
#include <algorithm>
#include <map>

#include "tracesmith/analysis/compact_trace.h"
#include "tracesmith/analysis/pc_samples.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::analysis {

std::unordered_map<uint64_t, FunctionProfile> InstructionProfiles(const CompactTrace& t,
                                                                  size_t max_instructions) {
  std::unordered_map<uint64_t, FunctionProfile> out;
  const PcSamples& in = t.pc_samples();
  if (in.empty()) return out;
  std::unordered_map<uint32_t, bool> counted;  // by stall id
  // (pid, function id) -> (cubin, pc) -> samples
  std::map<std::pair<uint32_t, uint32_t>, std::map<std::pair<uint64_t, uint32_t>, uint64_t>> acc;
  for (const auto& [key, samples] : in.samples()) {
    auto [it, added] = counted.try_emplace(key.stall_id, false);
    if (added) it->second = model::IsCountedStall(t.String(key.stall_id));
    if (it->second) acc[{key.pid, key.function_id}][{key.cubin_crc, key.pc_offset}] += samples;
  }
  std::unordered_map<PcSamples::Key, std::string, PcSamples::KeyHash> lines, sass;
  for (const model::PcLine& l : t.meta().Rows<model::PcLine>()) {
    std::string_view file = t.String(l.file_id);
    if (!l.file_id || file.empty()) continue;
    if (size_t slash = file.rfind('/'); slash != std::string_view::npos)
      file.remove_prefix(slash + 1);
    lines[PcSamples::Key{l.cubin_crc, l.pid, l.function_id, l.pc_offset, 0}] =
        StrFormat("%.*s:%u", int(file.size()), file.data(), l.line);
  }
  for (const model::PcSass& x : t.meta().Rows<model::PcSass>())
    sass[PcSamples::Key{x.cubin_crc, x.pid, x.function_id, x.pc_offset, 0}] =
        std::string(t.String(x.text_id));
  for (const auto& [fn, pcs] : acc) {
    FunctionProfile& p = out[uint64_t(fn.first) << 32 | in.OpNameOf(fn.first, fn.second)];
    std::vector<std::pair<uint64_t, std::pair<uint64_t, uint32_t>>> hot;  // samples, (cubin, pc)
    for (const auto& [where, n] : pcs) hot.push_back({n, where});
    std::stable_sort(hot.begin(), hot.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    uint64_t rest = 0;
    size_t rest_count = 0;
    for (size_t k = 0; k < hot.size(); ++k) {
      p.samples += hot[k].first;
      if (k >= max_instructions) {
        rest += hot[k].first;
        ++rest_count;
        continue;
      }
      const PcSamples::Key key{hot[k].second.first, fn.first, fn.second, hot[k].second.second, 0};
      ProfiledInstruction i;
      auto l = lines.find(key);
      i.line = l == lines.end() ? "(no line info)" : l->second;
      i.instruction = StrFormat("+0x%04x", key.pc_offset);
      if (auto s = sass.find(key); s != sass.end()) i.instruction += " " + s->second;
      i.samples = hot[k].first;
      p.instructions.push_back(std::move(i));
    }
    if (rest_count)
      p.instructions.push_back(
          {"(other lines)", StrFormat("(%zu other instructions)", rest_count), rest});
  }
  return out;
}

}  // namespace tracesmith::analysis
