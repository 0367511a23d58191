// CorrelationStacks: (correlation id -> stack id) pairs recorded on the
// application's threads at API entry, read by the writer thread.
//
// Each thread pushes into its own lock-free ring (thread_rings.h). A full
// ring drops the pair (counted): the rows then simply have no stack.
#pragma once

#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tracesmith/capture/stack_lookup.h"

namespace tracesmith::capture {

class CorrelationStacks final : public StackLookup {
 public:
  // 16k pairs per thread: ~40 ms of launches at 400k/s between two drains.
  static constexpr uint32_t kRingSize = 1u << 14;

  // Application thread, inside a CUPTI callback.
  static void Record(uint32_t correlation_id, uint32_t stack_id);

  // Writer thread: moves every recorded pair into the lookup table.
  void Drain();
  uint32_t Find(uint32_t correlation_id) override;
  static uint64_t dropped();

 private:
  std::unordered_map<uint32_t, uint32_t> table_;
  uint32_t max_correlation_ = 0;
};

}  // namespace tracesmith::capture
