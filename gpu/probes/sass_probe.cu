// Diagnostic: CUPTI SASS metrics outside TraceSmith, in variants, to find why
// --sass-counts reads zeros. Flags (argv[1], '+'-joined):
//   cb      enable in the CONTEXT_CREATED resource callback (else after cudaFree(0))
//   act     also CONCURRENT_KERNEL activity records
//   m2      also smsp__sass_thread_inst_executed
//   nolazy  enableLazyPatching = 0
//   thread  flush from another thread without the context current
//   push    (with thread) push the context on that thread first
//   nosync  no cudaDeviceSynchronize before the flush
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

static std::string flags;
static bool Has(const char* f) {
  return ("+" + flags + "+").find(std::string("+") + f + "+") != std::string::npos;
}
#define CK(x)                                                          \
  do {                                                                 \
    CUptiResult r_ = (x);                                              \
    if (r_ != CUPTI_SUCCESS) {                                         \
      const char* s_ = nullptr;                                        \
      cuptiGetResultString(r_, &s_);                                   \
      std::printf("PROBE %s: %s failed: %s\n", flags.c_str(), #x, s_); \
    }                                                                  \
  } while (0)

__global__ void loop(float* out, int iters) {
  float a = threadIdx.x * 0.5f, b = 1.0001f, c = 0.999f;
#pragma unroll 1
  for (int i = 0; i < iters; ++i) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

static uint64_t warp_id = 0, thread_id = 0;
static CUcontext g_ctx = nullptr;

static void Setup(CUcontext ctx) {
  g_ctx = ctx;
  CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CK(cuptiProfilerInitialize(&ip));
  CUpti_Device_GetChipName_Params cp = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cp.deviceIndex = 0;
  CK(cuptiDeviceGetChipName(&cp));
  std::vector<CUpti_SassMetrics_Config> cfg;
  const char* names[] = {"smsp__sass_inst_executed", "smsp__sass_thread_inst_executed"};
  for (int i = 0; i < (Has("m2") ? 2 : 1); ++i) {
    CUpti_SassMetrics_GetProperties_Params pp = {
        CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
    pp.pChipName = cp.pChipName;
    pp.pMetricName = names[i];
    CK(cuptiSassMetricsGetProperties(&pp));
    (i ? thread_id : warp_id) = pp.metric.metricId;
    CUpti_SassMetrics_Config c;
    c.metricId = pp.metric.metricId;
    c.outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    cfg.push_back(c);
  }
  CUpti_SassMetricsSetConfig_Params sp = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
  sp.pConfigs = cfg.data();
  sp.numOfMetricConfig = cfg.size();
  sp.deviceIndex = 0;
  CK(cuptiSassMetricsSetConfig(&sp));
  CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
  ep.ctx = ctx;
  ep.enableLazyPatching = Has("nolazy") ? 0 : 1;
  CK(cuptiSassMetricsEnable(&ep));
}

static void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                const void* data) {
  if (d == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
    Setup(static_cast<const CUpti_ResourceData*>(data)->context);
}

static void CUPTIAPI BufReq(uint8_t** b, size_t* size, size_t* max) {
  *size = 1 << 20;
  *b = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
static int kernels_seen = 0;
static void CUPTIAPI BufDone(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL)
      ++kernels_seen;
  free(b);
}

static void Flush() {
  CUpti_SassMetricsGetDataProperties_Params gp = {
      CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
  gp.ctx = g_ctx;
  CK(cuptiSassMetricsGetDataProperties(&gp));
  size_t n = gp.numOfPatchedInstructionRecords, per = gp.numOfInstances;
  std::printf("PROBE %s: records %zu instances %zu\n", flags.c_str(), n, per);
  if (!n || !per) return;
  std::vector<CUpti_SassMetrics_Data> data(n);
  std::vector<CUpti_SassMetrics_InstanceValue> values(n * per);
  for (size_t i = 0; i < n; ++i) {
    data[i].structSize = sizeof(CUpti_SassMetrics_Data);
    data[i].pInstanceValues = &values[i * per];
  }
  CUpti_SassMetricsFlushData_Params fp = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
  fp.ctx = g_ctx;
  fp.numOfPatchedInstructionRecords = n;
  fp.numOfInstances = per;
  fp.pMetricsData = data.data();
  CK(cuptiSassMetricsFlushData(&fp));
  std::map<uint64_t, uint64_t> sum, nonzero, maxv;
  std::map<std::string, int> fns;
  for (size_t i = 0; i < n; ++i) {
    if (data[i].functionName) fns[data[i].functionName]++;
    for (size_t k = 0; k < per; ++k) {
      auto& v = data[i].pInstanceValues[k];
      sum[v.metricId] += v.value;
      nonzero[v.metricId] += v.value != 0;
      if (v.value > maxv[v.metricId]) maxv[v.metricId] = v.value;
    }
  }
  for (auto& [id, s] : sum)
    std::printf("PROBE %s: metric %s sum %llu nonzero %llu max %llu\n", flags.c_str(),
                id == warp_id     ? "warp"
                : id == thread_id ? "thread"
                                  : "other",
                (unsigned long long)s, (unsigned long long)nonzero[id],
                (unsigned long long)maxv[id]);
  for (auto& [f, c] : fns)
    std::printf("PROBE %s: function %s records %d\n", flags.c_str(), f.c_str(), c);
}

int main(int argc, char** argv) {
  flags = argc > 1 ? argv[1] : "";
  CUpti_SubscriberHandle sub = nullptr;
  if (Has("cb")) {
    CK(cuptiSubscribe(&sub, (CUpti_CallbackFunc)OnCallback, nullptr));
    CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  }
  auto enable_activity = [] {
    CK(cuptiActivityRegisterCallbacks(BufReq, BufDone));
    CK(cuptiActivityEnable(Has("kernelkind") ? CUPTI_ACTIVITY_KIND_KERNEL
                                             : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  };
  if (Has("act") && !Has("late")) enable_activity();
  cudaSetDevice(0);
  cudaFree(0);
  if (!Has("cb")) {
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    Setup(ctx);
  }
  float* out = nullptr;
  cudaMalloc(&out, 64 * 128 * sizeof(float));
  if (Has("warm")) {  // one launch (CUPTI patches there) before the activity is enabled
    loop<<<64, 128>>>(out, 1000);
    cudaDeviceSynchronize();
  }
  if (Has("act") && Has("late")) enable_activity();
  for (int i = 0; i < 3; ++i) loop<<<64, 128>>>(out, 1000);
  if (!Has("nosync")) cudaDeviceSynchronize();
  std::printf("PROBE %s: expect per loop-body instruction warp count %d\n", flags.c_str(),
              3 * 64 * 4 * 1000);
  if (Has("actflush")) cuptiActivityFlushAll(1);
  if (Has("thread")) {
    std::thread t([] {
      if (Has("push")) cuCtxPushCurrent(g_ctx);
      Flush();
    });
    t.join();
  } else {
    Flush();
  }
  if (Has("act")) {
    cuptiActivityFlushAll(1);
    std::printf("PROBE %s: kernel records %d\n", flags.c_str(), kernels_seen);
  }
  CUpti_SassMetricsDisable_Params dp = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
  dp.ctx = g_ctx;
  CK(cuptiSassMetricsDisable(&dp));
  std::printf("PROBE %s: dropped %zu\n", flags.c_str(), (size_t)dp.numOfDroppedRecords);
  return 0;
}
