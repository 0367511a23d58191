#include "tracesmith/analysis/sass_counts.h"

#include <algorithm>
#include <unordered_map>

#include "tracesmith/analysis/report.h"
#include "tracesmith/timeline/compact_trace.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

std::string_view OpcodeOf(std::string_view sass) {
  auto skip_space = [&] {
    const size_t b = sass.find_first_not_of(" \t");
    sass.remove_prefix(b == std::string_view::npos ? sass.size() : b);
  };
  auto token = [&] {
    const size_t e = sass.find_first_of(" \t;");
    return sass.substr(0, e);
  };
  skip_space();
  if (sass.starts_with('@')) {  // the predicate: "@P0", "@!PT"
    sass.remove_prefix(token().size());
    skip_space();
  }
  return token();
}

std::string ExactCount(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

InstructionCounts CountsOf(const model::Trace& meta, uint32_t pid, uint32_t function_id) {
  InstructionCounts out;
  for (const model::SassCount& c : meta.Rows<model::SassCount>()) {
    if (c.pid != pid || c.function_id != function_id) continue;
    InstructionCount& n = out[{c.cubin_crc, c.pc_offset}];
    n.executed += c.executed;
    n.thread_executed += c.thread_executed;
  }
  return out;
}

std::vector<OpcodeCount> OpcodeHistogram(const model::Trace& meta, const InstructionIndex& index,
                                         uint32_t pid, uint32_t function_id,
                                         const InstructionCounts& counts) {
  std::map<std::string, OpcodeCount, std::less<>> by_opcode;
  uint64_t all = 0;
  for (const auto& [where, n] : counts) {
    const uint32_t text = index.SassOf(InstructionKey(where.first, pid, function_id, where.second));
    const std::string_view opcode = text ? OpcodeOf(meta.strings.Get(text)) : std::string_view();
    auto it = by_opcode.find(opcode);
    if (it == by_opcode.end()) it = by_opcode.emplace(std::string(opcode), OpcodeCount{}).first;
    it->second.opcode = it->first;
    it->second.executed += n.executed;
    it->second.thread_executed += n.thread_executed;
    it->second.instructions++;
    all += n.executed;
  }
  std::vector<OpcodeCount> out;
  for (auto& [opcode, c] : by_opcode) {
    c.share = Percent(c.executed, all);
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const OpcodeCount& a, const OpcodeCount& b) {
    return a.executed > b.executed;
  });
  return out;
}

std::vector<FunctionCounts> SummarizeSassCounts(const CompactTrace& t) {
  const model::Trace& meta = t.meta();
  std::map<std::pair<uint32_t, uint32_t>, InstructionCounts> counts;  // by (pid, function id)
  for (const model::SassCount& c : meta.Rows<model::SassCount>()) {
    InstructionCount& n = counts[{c.pid, c.function_id}][{c.cubin_crc, c.pc_offset}];
    n.executed += c.executed;
    n.thread_executed += c.thread_executed;
  }
  if (counts.empty()) return {};
  const InstructionIndex index = IndexInstructions(meta);
  std::map<std::pair<uint32_t, uint32_t>, FunctionCounts> by_function;
  std::unordered_map<uint64_t, FunctionCounts*> by_op_name;  // pid << 32 | the ops' name id
  for (const auto& [id, pcs] : counts) {
    FunctionCounts& f = by_function[id];
    f.pid = id.first;
    f.function_id = id.second;
    const uint32_t name_id = t.pc_samples().OpNameOf(f.pid, f.function_id);
    f.function = std::string(meta.strings.Get(f.function_id));
    f.name = std::string(meta.strings.Get(name_id));
    if (f.name.empty()) f.name = f.function.empty() ? "(unnamed function)" : f.function;
    by_op_name[uint64_t(f.pid) << 32 | name_id] = &f;
    for (const auto& [where, n] : pcs) {
      f.executed += n.executed;
      f.thread_executed += n.thread_executed;
    }
    f.instructions = pcs.size();
    f.opcodes = OpcodeHistogram(meta, index, f.pid, f.function_id, pcs);
  }
  for (const GpuOp& op : t.ops()) {
    if (op.kind() != OpKind::kKernel) continue;
    auto it = by_op_name.find(uint64_t(t.PidOfLane(op.lane())) << 32 | op.name_id);
    if (it == by_op_name.end()) continue;
    it->second->kernels++;
    it->second->kernel_ns += op.duration();
  }
  std::vector<FunctionCounts> out;
  for (auto& [id, f] : by_function) out.push_back(std::move(f));
  std::stable_sort(out.begin(), out.end(), [](const FunctionCounts& a, const FunctionCounts& b) {
    if (a.executed != b.executed) return a.executed > b.executed;
    return a.name < b.name;
  });
  return out;
}

}  // namespace tracesmith::analysis
