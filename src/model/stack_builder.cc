#include "tracesmith/model/stack_builder.h"

namespace tracesmith::model {

size_t StackBuilder::FrameHash::operator()(const Frame& f) const {
  uint64_t h = HashMix(0, f.rel_pc);
  h = HashMix(h, f.mapping_id);
  h = HashMix(h, f.function_id);
  h = HashMix(h, f.file_id);
  h = HashMix(h, f.line);
  return HashMix(h, f.kind);
}

StackBuilder::StackBuilder(Trace* trace) : trace_(trace) {
  const auto& frames = trace_->Rows<Frame>();
  for (size_t i = 0; i < frames.size(); ++i) frames_.emplace(frames[i], i + 1);
  const auto& nodes = trace_->Rows<StackNode>();
  for (size_t i = 0; i < nodes.size(); ++i)
    nodes_.emplace(uint64_t{nodes[i].parent_id} << 32 | nodes[i].frame_id, i + 1);
}

uint32_t StackBuilder::InternFrame(const Frame& frame) {
  auto [it, inserted] = frames_.emplace(frame, 0);
  if (inserted) {
    trace_->Rows<Frame>().push_back(frame);
    it->second = static_cast<uint32_t>(trace_->Rows<Frame>().size());
  }
  return it->second;
}

uint32_t StackBuilder::InternStack(std::span<const uint32_t> frame_ids_leaf_first) {
  uint32_t parent = 0;
  // Walk root → leaf so that shared prefixes (callers) share nodes.
  for (auto it = frame_ids_leaf_first.rbegin(); it != frame_ids_leaf_first.rend(); ++it) {
    auto [node, inserted] = nodes_.emplace(uint64_t{parent} << 32 | *it, 0);
    if (inserted) {
      trace_->Rows<StackNode>().push_back(StackNode{*it, parent});
      node->second = static_cast<uint32_t>(trace_->Rows<StackNode>().size());
    }
    parent = node->second;
  }
  return parent;
}

std::vector<uint32_t> StackFrames(const Trace& trace, uint32_t stack_id) {
  std::vector<uint32_t> out;
  const auto& nodes = trace.Rows<StackNode>();
  // Parents are always added before children, so a valid chain strictly
  // decreases; anything else is a corrupt table and ends the walk.
  while (stack_id != 0 && stack_id <= nodes.size()) {
    const StackNode& n = nodes[stack_id - 1];
    out.push_back(n.frame_id);
    if (n.parent_id >= stack_id) break;
    stack_id = n.parent_id;
  }
  return out;
}

}  // namespace tracesmith::model
