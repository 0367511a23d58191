#include "correlation_stacks.h"

#include "tracesmith/capture/stack_hook.h"

namespace tracesmith::capture {
namespace {

struct Ring {
  std::atomic<uint64_t> head{0};  // written by the owning thread
  std::atomic<uint64_t> tail{0};  // written by the writer thread
  uint64_t slots[CorrelationStacks::kRingSize];
};

std::mutex g_rings_mu;
std::vector<Ring*>* g_rings = nullptr;  // never freed: threads may outlive captures
std::atomic<uint64_t> g_dropped{0};
std::atomic<StackHook> g_hook{nullptr};
thread_local Ring* t_ring = nullptr;

__attribute__((noinline)) Ring* NewRing() {
  Ring* r = new Ring();
  std::lock_guard<std::mutex> lock(g_rings_mu);
  if (!g_rings) g_rings = new std::vector<Ring*>();
  g_rings->push_back(r);
  return r;
}

}  // namespace

void SetStackHook(StackHook hook) { g_hook.store(hook, std::memory_order_release); }
StackHook GetStackHook() { return g_hook.load(std::memory_order_acquire); }

void CorrelationStacks::Record(uint32_t correlation_id, uint32_t stack_id) {
  Ring* r = t_ring;
  if (__builtin_expect(r == nullptr, 0)) r = t_ring = NewRing();
  uint64_t head = r->head.load(std::memory_order_relaxed);
  if (head - r->tail.load(std::memory_order_acquire) >= kRingSize) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  r->slots[head % kRingSize] = (uint64_t{correlation_id} << 32) | stack_id;
  r->head.store(head + 1, std::memory_order_release);
}

void CorrelationStacks::Drain() {
  std::vector<Ring*> rings;
  {
    std::lock_guard<std::mutex> lock(g_rings_mu);
    if (g_rings) rings = *g_rings;
  }
  for (Ring* r : rings) {
    uint64_t tail = r->tail.load(std::memory_order_relaxed);
    uint64_t head = r->head.load(std::memory_order_acquire);
    for (; tail < head; ++tail) {
      uint64_t v = r->slots[tail % kRingSize];
      uint32_t corr = static_cast<uint32_t>(v >> 32);
      table_[corr] = static_cast<uint32_t>(v);
      if (corr > max_correlation_) max_correlation_ = corr;
    }
    r->tail.store(tail, std::memory_order_release);
  }
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

uint64_t CorrelationStacks::dropped() { return g_dropped.load(std::memory_order_relaxed); }

}  // namespace tracesmith::capture
