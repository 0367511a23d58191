#include "correlation_stacks.h"

#include <atomic>

#include "tracesmith/base/hot_path.h"
#include "tracesmith/capture/stack_hook.h"
#include "tracesmith/capture/thread_rings.h"

namespace tracesmith::capture {
namespace {

struct CorrelationTag;
// (correlation id << 32 | stack id) pairs.
using Rings = ThreadRings<uint64_t, CorrelationStacks::kRingSize, CorrelationTag>;
std::atomic<StackHook> g_hook{nullptr};

}  // namespace

void SetStackHook(StackHook hook) { g_hook.store(hook, std::memory_order_release); }
StackHook GetStackHook() { return g_hook.load(std::memory_order_acquire); }

TS_HOT void CorrelationStacks::Record(uint32_t correlation_id, uint32_t stack_id) {
  Rings::Push((uint64_t{correlation_id} << 32) | stack_id);
}

void CorrelationStacks::Drain() {
  Rings::Drain([this](uint64_t v) {
    uint32_t corr = static_cast<uint32_t>(v >> 32);
    table_[corr] = static_cast<uint32_t>(v);
    if (corr > max_correlation_) max_correlation_ = corr;
  });
  // Bounded: GPU records arrive within a few flushes of their API call, so
  // pairs far older than the newest correlation id are dropped.
  if (table_.size() > (1u << 21)) {
    uint32_t keep_from = max_correlation_ > (1u << 20) ? max_correlation_ - (1u << 20) : 0;
    std::erase_if(table_, [&](const auto& kv) { return kv.first < keep_from; });
  }
}

uint32_t CorrelationStacks::Find(uint32_t correlation_id) {
  if (table_.empty()) return 0;
  auto it = table_.find(correlation_id);
  return it == table_.end() ? 0 : it->second;
}

uint64_t CorrelationStacks::dropped() { return Rings::dropped(); }

}  // namespace tracesmith::capture
