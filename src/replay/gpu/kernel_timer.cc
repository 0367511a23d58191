#include "kernel_timer.h"

#include <cupti.h>

#include <atomic>
#include <cstdlib>

namespace tracesmith::replay::gpu {
namespace {

constexpr size_t kBufferBytes = 1u << 20;
std::atomic<uint64_t> g_last_ns{0};

void CUPTIAPI OnRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI OnComplete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (k->end > k->start) g_last_ns.store(k->end - k->start);
  }
  std::free(buffer);
}

}  // namespace

bool KernelTimer::Start() {
  if (active_) return true;
  if (cuptiActivityRegisterCallbacks(&OnRequest, &OnComplete) != CUPTI_SUCCESS) return false;
  active_ = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
  return active_;
}

void KernelTimer::Pause() {
  if (!active_) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void KernelTimer::Resume() {
  if (!active_) return;
  active_ = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
}

uint64_t KernelTimer::LastKernelNs() {
  if (!active_) return 0;
  g_last_ns.store(0);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return g_last_ns.load();
}

}  // namespace tracesmith::replay::gpu
