// Diagnostic (gpu/probes/README.md): does cuptiPmSamplingStop return, outside
// TraceSmith, and what does it depend on? PM sampling of one metric (or the
// ones named) on device 0 while busy kernels run, a decode thread emptying the
// hardware buffer every 10 ms, then the end in the variant asked for; a
// watchdog says how long Stop took, or that it never returned (exit 3).
//
//   nvcc -O2 -arch=sm_90 -o psp pm_stop_probe.cu -lcupti -lcuda
//   ./psp VARIANT [INTERVAL_NS=1000000] [METRICS=TPC.TriageCompute.sm__cycles_active.avg]
// VARIANT, '+'-joined words:
//   base      decode thread joined, then Stop on the main thread (Kineto's order)
//   decoding  Stop on the main thread while the decode thread goes on decoding
//   onthread  Stop on the decode thread (TraceSmith's order: it also started it)
//   drain     a decode until the end of the records right before Stop
//   act       CUPTI concurrent-kernel activity records on (as in a capture)
//   actoff    act, with the kinds a capture records, all disabled and
//             flushed right before Stop (a capture's end)
//   sub       a CUPTI callback subscriber on the driver API (as in a capture)
//   idle      no kernels running when Stop comes (else a kernel is in flight)
//   eval      each decoded sample's time and values read (GetSampleInfo,
//             EvaluateToGpuValues), as TraceSmith does
//   hosts     two host objects made, given a config image and ended first
//             (TraceSmith's metric choice)
//   img32     a counter data image of 32 samples (else 256)
//   exitbefore / exitafter  the end (drain, Stop, Disable) in a std::atexit
//             handler registered before / after the set-up's
//             cuptiProfilerInitialize (handlers run last-registered first)
//   nopm      no PM sampling at all: the kernels alone (to run under a capture)
//   incb      the set-up and Start on the decode thread while the context-created
//             callback waits for them (TraceSmith's order), before the
//             context's creation has returned
#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#define P(Type, v)              \
  Type v;                       \
  std::memset(&v, 0, sizeof v); \
  v.structSize = Type##_STRUCT_SIZE
#define CK(call)                                                       \
  do {                                                                 \
    CUptiResult r_ = (call);                                           \
    if (r_ != CUPTI_SUCCESS) {                                         \
      const char* s_ = "";                                             \
      cuptiGetResultString(r_, &s_);                                   \
      std::printf("PSP FAIL %s: %s (line %d)\n", #call, s_, __LINE__); \
      std::exit(2);                                                    \
    }                                                                  \
  } while (0)

__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

static double Ms(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
}

static void CUPTIAPI BufReq(uint8_t** b, size_t* size, size_t* max) {
  *size = 1 << 20;
  *b = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max = 0;
}
static void CUPTIAPI BufDone(CUcontext, uint32_t, uint8_t* b, size_t, size_t) { std::free(b); }
// exitbefore/exitafter: what the exit handler runs.
static std::function<void()> g_at_exit;
static void AtExit() {
  if (g_at_exit) g_at_exit();
}

// incb: the context-created callback hands the context to the decode thread
// and waits until it has set PM sampling up and started it.
static std::atomic<bool> g_asked{false}, g_ready{false};
static std::atomic<CUcontext> g_ctx{nullptr};
static void CUPTIAPI OnCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                const void* data) {
  if (domain != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_CONTEXT_CREATED) return;
  g_ctx = static_cast<const CUpti_ResourceData*>(data)->context;
  g_asked = true;
  while (!g_ready) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

int main(int argc, char** argv) {
  const std::string v = argc > 1 ? argv[1] : "base";
  auto has = [&](const char* w) {
    return ("+" + v + "+").find(std::string("+") + w + "+") != std::string::npos;
  };
  const uint64_t interval = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  std::vector<std::string> names;
  {
    std::string m = argc > 3 ? argv[3] : "TPC.TriageCompute.sm__cycles_active.avg";
    for (size_t at = 0; at <= m.size();) {
      size_t c = m.find(',', at);
      if (c == std::string::npos) c = m.size();
      names.push_back(m.substr(at, c - at));
      at = c + 1;
    }
  }
  std::vector<const char*> cnames;
  for (auto& n : names) cnames.push_back(n.c_str());

  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                      CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_MEMSET,
                                      CUPTI_ACTIVITY_KIND_RUNTIME,
                                      CUPTI_ACTIVITY_KIND_DRIVER,
                                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                      CUPTI_ACTIVITY_KIND_OVERHEAD};
  std::vector<uint8_t> avail, config, image;
  CUpti_PmSampling_Object* obj = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::atomic<uint64_t> samples{0}, calls{0}, evaluated{0};
  auto init = [&] {
    P(CUpti_PmSampling_CounterDataImage_Initialize_Params, p);
    p.pPmSamplingObject = obj;
    p.counterDataSize = image.size();
    p.pCounterData = image.data();
    CK(cuptiPmSamplingCounterDataImageInitialize(&p));
  };
  // Everything up to an emptied counter data image (no Start).
  auto setup = [&] {
    P(CUpti_Profiler_Initialize_Params, ip);
    CK(cuptiProfilerInitialize(&ip));
    P(CUpti_Device_GetChipName_Params, cp);
    cp.deviceIndex = 0;
    CK(cuptiDeviceGetChipName(&cp));
    P(CUpti_PmSampling_GetCounterAvailability_Params, ap);
    ap.deviceIndex = 0;
    CK(cuptiPmSamplingGetCounterAvailability(&ap));
    avail.assign(ap.counterAvailabilityImageSize, 0);
    ap.pCounterAvailabilityImage = avail.data();
    CK(cuptiPmSamplingGetCounterAvailability(&ap));
    for (int i = 0; has("hosts") && i < 2; ++i) {
      P(CUpti_Profiler_Host_Initialize_Params, h);
      h.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
      h.pChipName = cp.pChipName;
      h.pCounterAvailabilityImage = avail.data();
      CK(cuptiProfilerHostInitialize(&h));
      P(CUpti_Profiler_Host_ConfigAddMetrics_Params, a);
      a.pHostObject = h.pHostObject;
      a.ppMetricNames = cnames.data();
      a.numMetrics = cnames.size();
      CK(cuptiProfilerHostConfigAddMetrics(&a));
      P(CUpti_Profiler_Host_GetConfigImageSize_Params, z);
      z.pHostObject = h.pHostObject;
      CK(cuptiProfilerHostGetConfigImageSize(&z));
      std::vector<uint8_t> img(z.configImageSize);
      P(CUpti_Profiler_Host_GetConfigImage_Params, g);
      g.pHostObject = h.pHostObject;
      g.configImageSize = img.size();
      g.pConfigImage = img.data();
      CK(cuptiProfilerHostGetConfigImage(&g));
      P(CUpti_Profiler_Host_Deinitialize_Params, d);
      d.pHostObject = h.pHostObject;
      CK(cuptiProfilerHostDeinitialize(&d));
    }
    P(CUpti_Profiler_Host_Initialize_Params, hp);
    hp.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
    hp.pChipName = cp.pChipName;
    hp.pCounterAvailabilityImage = avail.data();
    CK(cuptiProfilerHostInitialize(&hp));
    host = hp.pHostObject;
    P(CUpti_Profiler_Host_ConfigAddMetrics_Params, am);
    am.pHostObject = hp.pHostObject;
    am.ppMetricNames = cnames.data();
    am.numMetrics = cnames.size();
    CK(cuptiProfilerHostConfigAddMetrics(&am));
    P(CUpti_Profiler_Host_GetConfigImageSize_Params, cs);
    cs.pHostObject = hp.pHostObject;
    CK(cuptiProfilerHostGetConfigImageSize(&cs));
    config.assign(cs.configImageSize, 0);
    P(CUpti_Profiler_Host_GetConfigImage_Params, ci);
    ci.pHostObject = hp.pHostObject;
    ci.configImageSize = config.size();
    ci.pConfigImage = config.data();
    CK(cuptiProfilerHostGetConfigImage(&ci));
    P(CUpti_PmSampling_Enable_Params, ep);
    ep.deviceIndex = 0;
    CK(cuptiPmSamplingEnable(&ep));
    obj = ep.pPmSamplingObject;
    P(CUpti_PmSampling_SetConfig_Params, sc);
    sc.pPmSamplingObject = obj;
    sc.configSize = config.size();
    sc.pConfig = config.data();
    sc.hardwareBufferSize = 64ull << 20;
    sc.samplingInterval = interval;
    sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    CK(cuptiPmSamplingSetConfig(&sc));
    P(CUpti_PmSampling_GetCounterDataSize_Params, ds);
    ds.pPmSamplingObject = obj;
    ds.pMetricNames = cnames.data();
    ds.numMetrics = cnames.size();
    ds.maxSamples = has("img32") ? 32 : 256;
    CK(cuptiPmSamplingGetCounterDataSize(&ds));
    image.assign(ds.counterDataSize, 0);
    init();
  };
  auto start = [&] {
    P(CUpti_PmSampling_Start_Params, st);
    st.pPmSamplingObject = obj;
    CK(cuptiPmSamplingStart(&st));
  };
  // One decode: samples counted, image emptied; true at the end of the records.
  auto decode = [&] {
    P(CUpti_PmSampling_DecodeData_Params, dp);
    dp.pPmSamplingObject = obj;
    dp.pCounterDataImage = image.data();
    dp.counterDataImageSize = image.size();
    CUptiResult r = cuptiPmSamplingDecodeData(&dp);
    ++calls;
    P(CUpti_PmSampling_GetCounterDataInfo_Params, gi);
    gi.pCounterDataImage = image.data();
    gi.counterDataImageSize = image.size();
    if (cuptiPmSamplingGetCounterDataInfo(&gi) == CUPTI_SUCCESS) samples += gi.numCompletedSamples;
    std::vector<double> values(cnames.size());
    for (size_t i = 0; has("eval") && i < gi.numCompletedSamples; ++i) {
      P(CUpti_PmSampling_CounterData_GetSampleInfo_Params, si);
      si.pPmSamplingObject = obj;
      si.pCounterDataImage = image.data();
      si.counterDataImageSize = image.size();
      si.sampleIndex = i;
      P(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
      ev.pHostObject = host;
      ev.pCounterDataImage = image.data();
      ev.counterDataImageSize = image.size();
      ev.rangeIndex = i;
      ev.ppMetricNames = cnames.data();
      ev.numMetrics = cnames.size();
      ev.pMetricValues = values.data();
      if (cuptiPmSamplingCounterDataGetSampleInfo(&si) == CUPTI_SUCCESS &&
          cuptiProfilerHostEvaluateToGpuValues(&ev) == CUPTI_SUCCESS)
        ++evaluated;
    }
    init();
    return r != CUPTI_SUCCESS ||
           dp.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
  };
  std::atomic<bool> stop_decoding{false}, stopped{false};
  std::atomic<int> stop_on_thread{0};  // 1: asked, 2: done
  double stop_ms = -1;
  auto stop = [&] {
    if (has("actoff")) {
      for (CUpti_ActivityKind k : kinds) CK(cuptiActivityDisable(k));
      cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    if (has("drain"))
      while (!decode()) {
      }
    const auto t = std::chrono::steady_clock::now();
    P(CUpti_PmSampling_Stop_Params, sp);
    sp.pPmSamplingObject = obj;
    CUptiResult r = cuptiPmSamplingStop(&sp);
    stop_ms = Ms(t);
    stopped = true;
    std::printf("PSP stop returned %d after %.1f ms\n", int(r), stop_ms);
  };

  cuInit(0);
  CUdevice dev;
  cuDeviceGet(&dev, 0);
  if (has("nopm")) {
    CUcontext c = nullptr;
    cuDevicePrimaryCtxRetain(&c, dev);
    cuCtxSetCurrent(c);
    for (int i = 0; i < 20; ++i) spin<<<132, 128>>>(90'000'000);
    cuCtxSynchronize();
    std::printf("PSP nopm: kernels done -> OK\n");
    return 0;
  }
  if (has("act") || has("actoff")) {
    CK(cuptiActivityRegisterCallbacks(BufReq, BufDone));
    if (has("actoff"))
      for (CUpti_ActivityKind k : kinds) CK(cuptiActivityEnable(k));
    else
      CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }
  const bool on_thread = has("onthread") || has("incb");
  // incb: the decode thread sets up and starts when the context-created
  // callback asks, the callback waiting for it.
  g_ready = false;
  CUpti_SubscriberHandle sub = nullptr;
  if (has("sub") || has("incb")) {
    CK(cuptiSubscribe(&sub, OnCallback, nullptr));
    CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
    if (has("incb")) CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
  }
  CUcontext ctx = nullptr;
  std::thread decoder([&] {
    if (has("incb")) {
      while (!g_asked) std::this_thread::sleep_for(std::chrono::microseconds(100));
      cuCtxSetCurrent(g_ctx);
      setup();
      start();
      g_ready = true;
    } else {
      while (!ctx) std::this_thread::sleep_for(std::chrono::microseconds(100));
      cuCtxSetCurrent(ctx);
      if (on_thread) {
        start();
      }
    }
    while (!stop_decoding) {
      if (on_thread && stop_on_thread == 1) {
        stop();
        stop_on_thread = 2;
        break;
      }
      decode();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  CUcontext c = nullptr;
  if (!has("incb")) {
    cuDevicePrimaryCtxRetain(&c, dev);
    cuCtxSetCurrent(c);
    if (has("exitbefore")) std::atexit(AtExit);
    setup();
    if (has("exitafter")) std::atexit(AtExit);
    ctx = c;
    if (!on_thread) start();
  } else {
    cuDevicePrimaryCtxRetain(&c, dev);  // the callback sets up and starts
    cuCtxSetCurrent(c);
  }
  const auto t_start = std::chrono::steady_clock::now();
  std::thread watchdog([&] {
    for (int i = 0; i < 150 && !stopped; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!stopped) {
      std::printf("PSP %s: STOP STUCK (no return in 15 s; %llu samples in %llu decodes before)\n",
                  v.c_str(), (unsigned long long)samples.load(), (unsigned long long)calls.load());
      std::fflush(stdout);
      std::_Exit(3);
    }
  });
  // ~1 s of 50 ms kernels.
  for (int i = 0; i < 20; ++i) spin<<<132, 128>>>(90'000'000);
  cuCtxSynchronize();
  if (!has("idle")) spin<<<132, 128>>>(900'000'000);  // ~0.5 s, in flight at Stop
  std::printf("PSP work done after %.0f ms: %llu samples in %llu decodes\n", Ms(t_start),
              (unsigned long long)samples.load(), (unsigned long long)calls.load());
  if (has("exitbefore") || has("exitafter")) {
    stop_decoding = true;
    decoder.join();
    watchdog.detach();
    g_at_exit = [&] {
      stop();
      while (!decode()) {
      }
      P(CUpti_PmSampling_Disable_Params, dis);
      dis.pPmSamplingObject = obj;
      CUptiResult r = cuptiPmSamplingDisable(&dis);
      std::printf("PSP %s: the end at exit: stop %.1f ms, disable %d, %llu samples -> OK\n",
                  v.c_str(), stop_ms, int(r), (unsigned long long)samples.load());
      std::fflush(stdout);
    };
    std::exit(0);  // main's locals stay alive for the handler (no return)
  }
  if (on_thread) {
    stop_on_thread = 1;
    decoder.join();
  } else if (has("decoding")) {
    stop();
    stop_decoding = true;
    decoder.join();
  } else {
    stop_decoding = true;
    decoder.join();
    stop();
  }
  while (!decode()) {
  }
  P(CUpti_PmSampling_Disable_Params, dis);
  dis.pPmSamplingObject = obj;
  CK(cuptiPmSamplingDisable(&dis));
  cuCtxSynchronize();
  std::printf(
      "PSP %s interval %llu ns, %zu metrics: stop %.1f ms, %llu samples (%llu evaluated) in %llu "
      "decodes -> OK\n",
      v.c_str(), (unsigned long long)interval, names.size(), stop_ms,
      (unsigned long long)samples.load(), (unsigned long long)evaluated.load(),
      (unsigned long long)calls.load());
  watchdog.join();
  if (sub) cuptiUnsubscribe(sub);
  return 0;
}
