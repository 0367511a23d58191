// StackBuilder: adds deduplicated frames and call stacks to a Trace.
//
// Frames are deduplicated by value; stacks by prefix (a call-site tree), so a
// stack costs one StackNode per frame the first time and nothing afterwards.
// Used by importers, symbolization and tests; capture keeps its own lock-free
// tables and streams the same rows.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::model {

class StackBuilder {
 public:
  explicit StackBuilder(Trace* trace);

  // 1-based frame id.
  uint32_t InternFrame(const Frame& frame);
  // Frames leaf first; returns the stack id (StackNode id of the leaf), 0 if empty.
  uint32_t InternStack(std::span<const uint32_t> frame_ids_leaf_first);

 private:
  struct FrameHash {
    size_t operator()(const Frame& f) const;
  };
  Trace* trace_;
  std::unordered_map<Frame, uint32_t, FrameHash> frames_;
  std::unordered_map<uint64_t, uint32_t> nodes_;  // (parent << 32 | frame) -> node id
};

// Frame ids of a stack, leaf first. Stops at a cycle or a dangling id.
std::vector<uint32_t> StackFrames(const Trace& trace, uint32_t stack_id);

}  // namespace tracesmith::model
