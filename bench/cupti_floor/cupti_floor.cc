// The cost floor of CUPTI activity tracing, without TraceSmith: an injection
// library (CUDA_INJECTION64_PATH) that enables the activity kinds named in
// CUPTI_FLOOR_KINDS (comma-separated: kernel, runtime, driver, memcpy,
// memset, sync, memory, nvtx, overhead, external; default "kernel"), hands
// CUPTI 8 MiB buffers and only counts the records. "launch-callback" also
// subscribes an empty callback to the driver's kernel-launch calls: what any
// tool that runs code at each launch (a host stack, a launch record) pays
// CUPTI before doing anything. bench/overhead.py runs it
// next to `tracesmith profile`: the difference is what TraceSmith itself
// costs, and one kind at a time shows what CUPTI charges for each.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
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

struct Kind {
  const char* name;
  CUpti_ActivityKind kinds[2];
};
constexpr Kind kKinds[] = {
    {"kernel", {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_INVALID}},
    {"runtime", {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_INVALID}},
    {"driver", {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_INVALID}},
    {"memcpy", {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
    {"memset", {CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_INVALID}},
    {"sync", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_INVALID}},
    {"memory", {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_INVALID}},
    {"nvtx", {CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA}},
    {"overhead", {CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_INVALID}},
    {"external", {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_INVALID}},
};

void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

bool EnableLaunchCallback() {
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, &OnCallback, nullptr) != CUPTI_SUCCESS) return false;
  for (CUpti_CallbackId cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz})
    if (cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid) != CUPTI_SUCCESS)
      return false;
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* env = getenv("CUPTI_FLOOR_KINDS");
  std::stringstream list(env ? env : "kernel");
  if (cuptiActivityRegisterCallbacks(&OnRequest, &OnComplete) != CUPTI_SUCCESS) return 1;
  for (std::string item; std::getline(list, item, ',');) {
    bool known = false;
    if (item == "launch-callback") {
      known = true;
      if (!EnableLaunchCallback()) std::fprintf(stderr, "cupti_floor: cannot subscribe\n");
    }
    for (const Kind& k : kKinds) {
      if (item != k.name) continue;
      known = true;
      for (CUpti_ActivityKind a : k.kinds)
        if (a != CUPTI_ACTIVITY_KIND_INVALID && cuptiActivityEnable(a) != CUPTI_SUCCESS)
          std::fprintf(stderr, "cupti_floor: cannot enable %s\n", item.c_str());
    }
    if (!known) std::fprintf(stderr, "cupti_floor: unknown kind '%s'\n", item.c_str());
  }
  std::atexit(&AtExit);
  return 1;
}
