// StackCollector's private row types, shared by its two source files
// (Drain lives apart so that code which never drains, such as a probe
// library, does not link the SBT writer).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::stacks {

// A cached stack: its 128-bit key hash (two 64-bit halves) and id. hash is
// stored last, with release, and read first, with acquire.
struct StackCollector::Slot {
  std::atomic<uint64_t> hash{0};
  std::atomic<uint64_t> hash2{0};
  std::atomic<uint32_t> id{0};
};

struct StackCollector::PendingFrame {
  model::Frame row;
  std::string function, file;  // Python frames
};

struct StackCollector::PendingMapping {
  model::Mapping row;
  std::string path, build_id;
};

}  // namespace tracesmith::stacks
