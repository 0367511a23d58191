// The cost floor of CUPTI activity tracing, without TraceSmith: an injection
// library (CUDA_INJECTION64_PATH) that enables the activity kinds named in
// CUPTI_FLOOR_KINDS ("kernel", "kernel,runtime"; default "kernel"), hands
// CUPTI 8 MiB buffers and only counts the records. bench/capture_overhead.sh
// runs it next to `tracesmith profile`: the difference is what TraceSmith
// itself costs.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr size_t kBufferBytes = 8u << 20;
std::atomic<unsigned long long> g_records{0};

void CUPTIAPI OnRequest(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI OnComplete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  unsigned long long n = 0;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) ++n;
  g_records += n;
  free(buffer);
}

void AtExit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::fprintf(stderr, "cupti_floor: records=%llu\n", g_records.load());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* env = getenv("CUPTI_FLOOR_KINDS");
  std::string kinds = env ? env : "kernel";
  if (cuptiActivityRegisterCallbacks(&OnRequest, &OnComplete) != CUPTI_SUCCESS) return 1;
  if (kinds.find("kernel") != std::string::npos)
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (kinds.find("runtime") != std::string::npos) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME);
  std::atexit(&AtExit);
  return 1;
}
