// Instruction profiles of sampled functions (pc_profile.h), for the GPU
// frames of flame graphs.
#include "tracesmith/analysis/pc_profile.h"

#include <algorithm>
#include <map>

#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/pc_samples.h"

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
  const InstructionIndex index = IndexInstructions(t);
  // "kernels.cu:66": the file's name and the line.
  auto line_label = [&](const PcSamples::Key& key) -> std::string {
    const InstructionIndex::Line* l = index.LineOf(key);
    std::string_view file = l && l->file_id ? t.String(l->file_id) : std::string_view{};
    if (file.empty()) return "(no line info)";
    if (size_t slash = file.rfind('/'); slash != std::string_view::npos)
      file.remove_prefix(slash + 1);
    return StrFormat("%.*s:%u", int(file.size()), file.data(), l->line);
  };
  for (const auto& [fn, pcs] : acc) {
    FunctionProfile& p = out[uint64_t(fn.first) << 32 | in.OpNameOf(fn.first, fn.second)];
    std::vector<std::pair<uint64_t, std::pair<uint64_t, uint32_t>>> hot;  // samples, (cubin, pc)
    for (const auto& [where, n] : pcs) hot.push_back({n, where});
    std::stable_sort(hot.begin(), hot.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    std::map<std::string, std::pair<uint64_t, size_t>> rest;  // by line: samples, instructions
    for (size_t k = 0; k < hot.size(); ++k) {
      p.samples += hot[k].first;
      const PcSamples::Key key =
          InstructionKey(hot[k].second.first, fn.first, fn.second, hot[k].second.second);
      std::string line = line_label(key);
      if (k >= max_instructions) {  // the rest, per line (its share of the line stays)
        auto& r = rest[line];
        r.first += hot[k].first;
        r.second++;
        continue;
      }
      ProfiledInstruction i;
      i.line = std::move(line);
      i.instruction = StrFormat("+0x%04x", key.pc_offset);
      if (uint32_t text = index.SassOf(key)) i.instruction += " " + std::string(t.String(text));
      i.samples = hot[k].first;
      p.instructions.push_back(std::move(i));
    }
    for (auto& [line, r] : rest)
      p.instructions.push_back({line, StrFormat("(%zu other instructions)", r.second), r.first});
  }
  return out;
}

}  // namespace tracesmith::analysis
