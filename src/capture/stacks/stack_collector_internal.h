// StackCollector's private row types, shared by its two source files
// (Drain lives apart so that code which never drains, such as a probe
// library, does not link the SBT writer).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "tracesmith/capture/stacks/stack_collector.h"

namespace tracesmith::capture::stacks {

struct StackCollector::Stored {
  uint32_t id = 0;
  std::vector<uint64_t> keys;
};

struct StackCollector::Slot {
  std::atomic<uint64_t> hash{0};
  std::atomic<const Stored*> stored{nullptr};
};

struct StackCollector::PendingFrame {
  model::Frame row;
  std::string function, file;  // Python frames
};

struct StackCollector::PendingMapping {
  model::Mapping row;
  std::string path, build_id;
};

}  // namespace tracesmith::capture::stacks
