// CuptiEngine, CUPTI side: subscription, activity kinds, callbacks.
// The writer thread is in engine_writer.cc.
#include "cupti_engine.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "cubin_hash.h"
#include "generated_nvtx_meta.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/hot_path.h"
#include "tracesmith/capture/stack_hook.h"
#include "tracesmith/cuda/call.h"
#include "tracesmith/model/launch_rank.h"

namespace tracesmith::capture {
namespace {

// Calls that do no GPU work and that programs make at very high rates
// (PyTorch calls cudaGetDevice several times per op). Recording them would
// cost more than the work being traced; --kinds api keeps the rest.
constexpr std::string_view kNoisyRuntimeApis[] = {
    "cudaGetDevice",
    "cudaSetDevice",
    "cudaGetLastError",
    "cudaPeekAtLastError",
    "cudaGetDeviceCount",
    "cudaDeviceGetAttribute",
    "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo",
    "cudaGetDeviceProperties",
    "cudaFuncGetAttributes",
    "cudaPointerGetAttributes",
    "cudaDriverGetVersion",
    "cudaRuntimeGetVersion",
    "cudaGetErrorString",
    "cudaGetErrorName",
    "cudaGetDriverEntryPoint",
    "cudaGetFuncBySymbol",
    "cudaThreadExchangeStreamCaptureMode",
    "cudaStreamGetPriority",
    "cudaDeviceGetStreamPriorityRange",
    "cudaGetSymbolAddress",
    "cudaGetExportTable",
    "cudaFuncSetAttribute",
};
constexpr std::string_view kNoisyDriverApis[] = {
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDeviceGetUuid",  // (also the PC sampling recorder's, in the context callback)
    "cuDeviceGetUuid_v2",
    "cuDeviceGetCount",
    "cuDevicePrimaryCtxGetState",
    "cuGetProcAddress",
    "cuPointerGetAttribute",
    "cuPointerGetAttributes",
    "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo",
    "cuGetErrorString",
    "cuGetErrorName",
    "cuDriverGetVersion",
    "cuFuncGetAttribute",
    "cuKernelGetAttribute",
    "cuCtxGetStreamPriorityRange",
    "cuGetExportTable",
    "cuThreadExchangeStreamCaptureMode",
    "cuCtxGetFlags",
    "cuCtxGetId",
    "cuStreamGetCtx",
    "cuStreamGetId",
    "cuLibraryGetKernel",
    "cuKernelGetFunction",
    "cuFuncGetName",
    "cuModuleGetFunction",
    "cuCtxPushCurrent",
    "cuCtxPopCurrent",
};

bool Matches(std::string_view name, const std::string_view* list, size_t n) {
  name = StripApiVersion(name);
  for (size_t i = 0; i < n; ++i)
    if (name == list[i]) return true;
  return false;
}

// Driver calls that put work on a GPU (where host stacks are taken, and the
// driver API rows of --kinds driver-launch), with their cost site.
bool IsWorkSubmittingDriverApi(std::string_view name, CostSite* site = nullptr) {
  CostSite s;
  if (name.rfind("cuLaunch", 0) == 0) {
    s = CostSite::kLaunch;
  } else if (name.rfind("cuMemcpy", 0) == 0) {
    s = CostSite::kCopy;
  } else if (name.rfind("cuMemset", 0) == 0) {
    s = CostSite::kMemset;
  } else if (name.rfind("cuGraphLaunch", 0) == 0) {
    s = CostSite::kGraph;
  } else {
    return false;
  }
  if (site) *site = s;
  return true;
}

const char* CallbackName(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS) return nullptr;
  return name;
}

// NVTX capture range state per thread (only used with --capture-range=nvtx:).
thread_local int t_nvtx_depth = 0;
thread_local int t_capture_depth = -1;

}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
uint64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

CuptiEngine& CuptiEngine::Get() {
  // Leaked on purpose: atexit handlers and late CUPTI callbacks may run after
  // static destructors.
  static CuptiEngine* engine = new CuptiEngine();
  return *engine;
}

Status CuptiEngine::Start(const CaptureOptions& options, MakeRecordersFn make_recorders) {
  if (running_.load()) return FailedPrecondition("a TraceSmith capture is already running");
  options_ = options;
  pid_ = static_cast<uint32_t>(getpid());

  // Tuning knob for overhead measurements (TRACESMITH_SUBSCRIBE=0): records
  // activities without a callback subscriber (no module loads, capture
  // ranges, stacks, recorders or CUPTI-in-use detection).
  CUptiResult rc = options.tuning.subscribe
                       ? cuptiSubscribe(&subscriber_, &CuptiEngine::OnCallback, this)
                       : CUPTI_SUCCESS;
  if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    subscriber_ = nullptr;
    return FailedPrecondition(
        "CUPTI is already in use in this process (another profiler such as torch.profiler "
        "or Nsight holds it); the program runs unprofiled");
  }
  if (rc != CUPTI_SUCCESS) {
    subscriber_ = nullptr;
    return cuda::CuptiCallError(rc, "cuptiSubscribe", __FILE__, __LINE__);
  }
  Status st = OpenOutput(options);
  if (!st.ok()) {
    if (subscriber_) cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
    return st;
  }
  pool_.Configure(size_t{options.buffer_mb} << 20, size_t{options.tuning.activity_buffer_kb} << 10,
                  options.tuning.buffer_prefault);
  // Tuning knob (TRACESMITH_DEVICE_BUFFER_MB): CUPTI's per-context device
  // buffer (default 3 MiB in CUPTI 13): fewer device->host flushes on long
  // launch bursts, at the cost of GPU memory.
  if (options.tuning.device_buffer_mb > 0) {
    size_t bytes = size_t(options.tuning.device_buffer_mb) << 20, size = sizeof(bytes);
    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &bytes);
  }
  // Our buffers come zeroed (BufferPool): CUPTI need not zero each one inside
  // the program's CUDA call that asked for it (issue #41 item 2). Where the
  // attribute is unknown CUPTI zeroes them as before.
  // Set either way: a second capture in the process without zeroed buffers
  // (TRACESMITH_BUFFER_PREFAULT=0) must turn the first one's setting off.
  {
    uint8_t zeroed = pool_.zeroed() ? 1 : 0;
    size_t size = sizeof(zeroed);
    const bool set = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                               &size, &zeroed) == CUPTI_SUCCESS;
    zeroed_buffers_ = zeroed && set;
  }
  CUPTI_CALL(cuptiActivityRegisterCallbacks(&CuptiEngine::OnBufferRequested,
                                            &CuptiEngine::OnBufferCompleted));
  // Thread ids as the OS knows them (gettid), so they match /proc and stacks.
  // Tuning knob for overhead measurements (TRACESMITH_TID_TYPE=process):
  // CUPTI's default (pthread-derived) ids.
  if (options.tuning.system_thread_ids) cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  tick_rate_ = TickRate::Start();
  SlowCallProbe::Enable(options.tuning.slow_call_probe);
  writer_cost_ = WriterCost{};
  recorders_ended_ = false;  // EndRecorders runs once per capture (a second in-process one too)
  RecorderContext context;
  context.pid = pid_;
  context.options = &options_;
  context.subscribed = subscriber_ != nullptr;
  context.output_path = output_path_;
  if (make_recorders) recorders_ = make_recorders(context);
  for (int i = 0; i < kMaxRecorders; ++i)
    recorder_at_[i] = i < int(recorders_.size()) ? recorders_[i].get() : nullptr;
  driver_rows_ =
      subscriber_ && (options.groups & kGroupDriverLaunch) && !(options.groups & kGroupDriver);
  if (subscriber_) StartStacks();
  if (subscriber_) RETURN_IF_ERROR(EnableCallbacks());

  start_mono_ns_ = MonotonicNs();
  stop_requested_ = false;
  writer_done_ = false;
  range_done_ = false;
  running_ = true;
  WriteMetadataAtStart();
  if (options.range == CaptureRange::kAll && options.delay_ns == 0) {
    Status on = SetActivities(true);
    if (!on.ok()) {
      running_ = false;
      return on;
    }
  }
  writer_ = std::thread([this] { WriterLoop(); });
  return OkStatus();
}

Status CuptiEngine::OpenOutput(const CaptureOptions& options) {
  format::SbtWriterOptions wo;
  auto cmdline = ReadFileToString("/proc/self/cmdline");
  launch_ = model::ProcessLaunchRank(::getenv, cmdline.ok() ? *cmdline : std::string());
  std::string path = options.output;
  if (launch_.rank >= 0) {
    path = PerProcessOutputPath(options.output, pid_, launch_.rank);
    wo.overwrite = true;
  } else {
    // The first process of a tree claims the name; the others add .pid<PID>.
    wo.overwrite = options.overwrite;
    struct stat sb;
    if (!options.overwrite && ::stat(path.c_str(), &sb) == 0) {
      path = PerProcessOutputPath(options.output, pid_, -1);
      wo.overwrite = true;
    }
  }
  auto opened = format::SbtWriter::Open(path, wo);
  if (!opened.ok() && !wo.overwrite) {
    // Lost a race with another process of the tree.
    path = PerProcessOutputPath(options.output, pid_, -1);
    wo.overwrite = true;
    opened = format::SbtWriter::Open(path, wo);
  }
  if (!opened.ok()) return opened.status();
  sbt_ = std::move(opened).value();
  output_path_ = path;

  class LiveNames final : public NameSource {
   public:
    std::string_view String(const char* p) override { return p ? std::string_view(p) : ""; }
    std::string_view ApiName(uint8_t domain, uint32_t cbid) override {
      CUpti_CallbackDomain d =
          domain == model::kApiRuntime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
      const char* n = CallbackName(d, cbid);
      return n ? std::string_view(n) : std::string_view("?");
    }
    std::string ThreadName(uint32_t tid) override {
      char path[64];
      std::snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
      FILE* f = std::fopen(path, "r");
      if (!f) return {};
      char buf[64] = {};
      size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
      std::fclose(f);
      while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\0')) --n;
      return std::string(buf, n);
    }
  };
  live_names_ = std::make_unique<LiveNames>();
  NameSource* names = live_names_.get();
  if (!options.dump_raw_dir.empty()) {
    ::mkdir(options.dump_raw_dir.c_str(), 0755);
    auto dump = RawDumpWriter::Open(
        options.dump_raw_dir + "/cupti-" + std::to_string(pid_) + ".rawdump", names);
    if (dump.ok()) {
      raw_dump_ = std::move(dump).value();
      names = raw_dump_.get();
    } else {
      std::fprintf(stderr, "tracesmith: warning: %s\n", dump.status().ToString().c_str());
    }
  }
  sink_ = std::make_unique<SbtSink>(sbt_.get());
  converter_ = std::make_unique<ActivityConverter>(sink_.get(), names, pid_);
  converter_->set_stack_lookup(&stacks_);
  return OkStatus();
}

Status CuptiEngine::EnableCallbacks() {
  // Callbacks on work-submitting calls only when host stacks or driver-launch
  // rows (driver_calls.h) need them: each enabled callback is paid on every
  // launch. The recorders claim theirs (synchronizing calls, allocation
  // calls, the replay capture's): rare calls, but for replay's launches.
  const bool stacks = GetStackHook() != nullptr;
  converter_->TrackRuntimeCalls(driver_rows_);
  table_ = CallbackTable{};
  for (size_t i = 0; i < recorders_.size(); ++i) {
    CallbackClaims claims(&table_, int(i), stacks);
    recorders_[i]->Claim(claims);
  }
  // Resource callbacks: contexts (for per-context drop counts) and modules.
  CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                 CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  if (table_.context_destroying)
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  if ((options_.groups & kGroupModule) || table_.module_loads) {
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_MODULE_LOADED));
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING));
  }
  if (table_.graph_nodes)
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED})
      CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE, cbid));
  if (stacks || driver_rows_) {
    for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      CostSite site;
      const char* name = CallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
      if (name && IsWorkSubmittingDriverApi(name, &site))
        table_.ClaimWork(cbid, site, stacks, driver_rows_);
    }
  }
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    if (table_.driver[cbid].enabled())
      CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
  if (options_.range == CaptureRange::kCudaProfilerApi) {
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000));
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000));
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuProfilerStart));
    CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuProfilerStop));
  }
  if (table_.nvtx_pushes)
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
          CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
          CUPTI_CBID_NVTX_nvtxMarkEx, CUPTI_CBID_NVTX_nvtxDomainMarkEx})
      CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid));
  if (options_.range == CaptureRange::kNvtx) {
    for (CUpti_CallbackId cbid :
         {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
          CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
          CUPTI_CBID_NVTX_nvtxDomainRangePop}) {
      CUPTI_CALL(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_NVTX, cbid));
    }
  }
  return OkStatus();
}

Status CuptiEngine::SetActivities(bool enable) {
  std::lock_guard<std::mutex> lock(activity_mu_);
  if (activities_on_.load() == enable) return OkStatus();
  uint32_t g = options_.groups;
  std::vector<CUpti_ActivityKind> kinds = {CUPTI_ACTIVITY_KIND_CONTEXT};
  // CUPTI's SASS metrics and concurrent-kernel records exclude each other
  // (CUDA 13.0, H200: enabled first, the concurrent-kernel records leave every
  // SASS count at 0; enabled after, cuptiActivityEnable says NOT_COMPATIBLE);
  // the serialized kernel records work beside them (gpu/probes/sass_probe.cu).
  if (g & kGroupKernel)
    kinds.push_back(options_.sass_counts ? CUPTI_ACTIVITY_KIND_KERNEL
                                         : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (g & kGroupMemcpy) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MEMCPY2);
  }
  if (g & kGroupMemset) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMSET);
  if (g & kGroupSyncActivity) kinds.push_back(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (g & kGroupRuntime) kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
  if (g & kGroupDriver) kinds.push_back(CUPTI_ACTIVITY_KIND_DRIVER);
  if (g & kGroupMemory) kinds.push_back(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (g & kGroupNvtx) {
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER);
    kinds.push_back(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  }
  if (g & kGroupOverhead) kinds.push_back(CUPTI_ACTIVITY_KIND_OVERHEAD);
  if (g & kGroupExternal) kinds.push_back(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  for (CUpti_ActivityKind k : kinds) {
    CUptiResult rc = enable ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
    if (rc != CUPTI_SUCCESS && !options_.quiet) {
      const char* msg = nullptr;
      cuptiGetResultString(rc, &msg);
      std::fprintf(stderr, "tracesmith: warning: cannot %s CUPTI activity kind %d: %s\n",
                   enable ? "enable" : "disable", static_cast<int>(k), msg ? msg : "?");
    }
  }
  if (enable && options_.tuning.api_filter) {
    // Per-API filters apply after the kind is enabled (the kind resets them).
    if (g & kGroupRuntime) {
      for (uint32_t cbid = 1; cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++cbid) {
        const char* name = CallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
        if (name && Matches(name, kNoisyRuntimeApis, std::size(kNoisyRuntimeApis)))
          cuptiActivityEnableRuntimeApi(cbid, 0);
      }
    }
    if (g & kGroupDriver) {
      for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
        const char* name = CallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
        if (name && Matches(name, kNoisyDriverApis, std::size(kNoisyDriverApis)))
          cuptiActivityEnableDriverApi(cbid, 0);
      }
    }
  }
  if (enable) enabled_mono_ns_ = MonotonicNs();
  activities_on_ = enable;
  for (const auto& r : recorders_) r->OnActivities(enable);
  return OkStatus();
}

void CUPTIAPI CuptiEngine::OnBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  CuptiEngine& e = Get();
  CostTimer timer(ThreadCost::Get(), CostSite::kBuffer);
  *max_records = 0;  // as many as fit
  *buffer = e.pool_.Acquire();
  *size = *buffer ? e.pool_.buffer_bytes() : 0;
  timer.Finish();
}

void CUPTIAPI CuptiEngine::OnBufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                             size_t valid_size) {
  CuptiEngine& e = Get();
  if (!buffer) return;
  CostTimer timer(ThreadCost::Get(), CostSite::kBuffer);
  {
    std::lock_guard<std::mutex> lock(e.completed_mu_);
    e.completed_.push_back({buffer, valid_size});
  }
  timer.Finish();
}

TS_HOT void CUPTIAPI CuptiEngine::OnCallback(void* userdata, CUpti_CallbackDomain domain,
                                             CUpti_CallbackId cbid, const void* cbdata) {
  auto* e = static_cast<CuptiEngine*>(userdata);
  if (e->abandoned_.load(std::memory_order_relaxed)) return;
  switch (domain) {
    case CUPTI_CB_DOMAIN_DRIVER_API: {
      const auto* info = static_cast<const CUpti_CallbackData*>(cbdata);
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart ||
          cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
        if (info->callbackSite != CUPTI_API_ENTER) return;
        bool start = cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
        if (!e->range_done_.load()) (void)e->SetActivities(start);
        if (!start) e->flush_requests_.fetch_add(1);
        return;
      }
      // Hot path: a launch's callback (stacks or driver-launch rows on) reads
      // its route and calls no recorder unless one claimed launches.
      if (cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return;
      const DriverRoute route = e->table_.driver[cbid];
      const bool entry = info->callbackSite == CUPTI_API_ENTER;
      if (route.flags & DriverRoute::kTimed) {
        if (entry) {
          // The driver's frame that called us: stacks start there, without
          // walking this callback's own frames on every launch.
          stacks::CallerFrame from;
          TRACESMITH_CALLER_FRAME(from);
          e->OnDriverEnter(cbid, info, route, from);
        } else {
          if (route.flags & DriverRoute::kDriverRow) {
            CostTimer timer(ThreadCost::Get(), CostSite::kDriverRow);
            DriverCalls::OnExit(cbid, info);
            timer.Finish();
          }
          if (route.exit) e->OnDriverExit(cbid, info, route);
        }
      }
      // Untimed claims (the replay capture), after the timed path.
      if (const uint8_t after = entry ? route.after_entry : route.after_exit)
        e->Deliver(after, cbid, info, 0, entry);
      return;
    }
    case CUPTI_CB_DOMAIN_RUNTIME_API: {
      const auto* info = static_cast<const CUpti_CallbackData*>(cbdata);
      if (info->callbackSite != CUPTI_API_ENTER) return;
      bool start = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
      if (!e->range_done_.load()) (void)e->SetActivities(start);
      if (!start) e->flush_requests_.fetch_add(1);
      return;
    }
    case CUPTI_CB_DOMAIN_RESOURCE: {
      const auto* data = static_cast<const CUpti_ResourceData*>(cbdata);
      if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
          cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
        stacks::CallerFrame from;
        TRACESMITH_CALLER_FRAME(from);
        e->OnGraphResource(cbid, data, from);
        return;
      }
      CostTimer timer(ThreadCost::Get(), CostSite::kOther);
      e->OnResource(cbid, data);
      timer.Finish();
      return;
    }
    case CUPTI_CB_DOMAIN_NVTX: {
      CostTimer timer(ThreadCost::Get(), CostSite::kOther);
      e->OnNvtx(cbid, static_cast<const CUpti_NvtxData*>(cbdata));
      timer.Finish();
      return;
    }
    default:
      return;
  }
}

TS_HOT void CuptiEngine::OnDriverEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                                       DriverRoute route, const stacks::CallerFrame& from) {
  ThreadCost* tc = ThreadCost::Get();
  CostTimer timer(tc, CostSite(route.site));
  uint32_t stack = 0;
  if (route.flags & DriverRoute::kStack) {
    stack = TakeStack(tc, timer.on, from);
    if (stack) CorrelationStacks::Record(info->correlationId, stack);
  }
  if (route.entry) Deliver(route.entry, cbid, info, stack, /*entry=*/true);
  if (route.flags & DriverRoute::kDriverRow)
    DriverCalls::OnEnter(cbid, info, activities_on_.load(std::memory_order_relaxed));
  timer.Finish();
}

void CuptiEngine::OnDriverExit(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                               DriverRoute route) {
  CostTimer timer(ThreadCost::Get(), CostSite(route.site));
  Deliver(route.exit, cbid, info, 0, /*entry=*/false);
  timer.Finish();
}

void CuptiEngine::Deliver(uint8_t recorders, CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                          uint32_t stack_id, bool entry) {
  const DriverCallEvent call{cbid, info, stack_id, entry,
                             activities_on_.load(std::memory_order_relaxed)};
  for (; recorders; recorders &= uint8_t(recorders - 1))
    recorder_at_[__builtin_ctz(recorders)]->OnDriverCall(call);
}

void CuptiEngine::RecordDeviceMemoryUsed() {
  if (!running_.load() || abandoned_.load()) return;
  for (const auto& r : recorders_) r->OnCaptureEdge();
}

void CuptiEngine::OnGraphResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data,
                                  const stacks::CallerFrame& from) {
  if (cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
    return;
  const auto* graph = static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
  if (!graph) return;
  struct Walk {
    CuptiEngine* engine;
    ThreadCost* tc;
    bool timed;
    const stacks::CallerFrame* from;
  };
  ThreadCost* tc = ThreadCost::Get();
  CostTimer timer(tc, CostSite::kOther);
  const Walk walk{this, tc, timer.on, &from};
  const GraphNodeEvent event{cbid, graph,
                             [](const void* c) {
                               const Walk& w = *static_cast<const Walk*>(c);
                               return w.engine->TakeStack(w.tc, w.timed, *w.from);
                             },
                             &walk};
  for (uint16_t m = table_.graph_nodes; m; m &= uint16_t(m - 1))
    recorder_at_[__builtin_ctz(m)]->OnGraphNode(event);
  timer.Finish();
}

void CuptiEngine::OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) {
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    {
      std::lock_guard<std::mutex> lock(events_mu_);
      contexts_.push_back(data->context);
    }
    for (uint16_t m = table_.context_created; m; m &= uint16_t(m - 1))
      recorder_at_[__builtin_ctz(m)]->OnContextCreated(data->context);
    return;
  }
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    for (uint16_t m = table_.context_destroying; m; m &= uint16_t(m - 1))
      recorder_at_[__builtin_ctz(m)]->OnContextDestroying(data->context);
    return;
  }
  if (cbid != CUPTI_CBID_RESOURCE_MODULE_LOADED &&
      cbid != CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING)
    return;
  const auto* mod = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
  model::ModuleLoadEvent m;
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  m.ts_ns = ts;
  m.pid = pid_;
  if (mod) {
    m.module_id = mod->moduleId;
    m.cubin_bytes = mod->cubinSize;
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED && mod->pCubin && mod->cubinSize)
      m.cubin_hash = CubinHash(reinterpret_cast<const uint8_t*>(mod->pCubin), mod->cubinSize);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
      for (uint16_t r = table_.module_loads; r; r &= uint16_t(r - 1))
        recorder_at_[__builtin_ctz(r)]->OnModuleLoaded(data->context, *mod);
  }
  if (data->context) {
    cuptiGetContextId(data->context, &m.context_id);
    cuptiGetDeviceId(data->context, &m.device_id);
  }
  m.op = cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ? model::kModuleLoaded : model::kModuleUnloaded;
  module_loads_.fetch_add(cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ? 1 : 0);
  std::lock_guard<std::mutex> lock(events_mu_);
  modules_.push_back(m);
}

void CuptiEngine::OnNvtx(CUpti_CallbackId cbid, const CUpti_NvtxData* data) {
  if (!data || !data->functionParams) return;
  if (table_.nvtx_pushes) {
    const void* p = data->functionParams;
    NvtxPushEvent e{cbid, nullptr, nullptr};
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        e.attributes = static_cast<const nvtxRangePushEx_params*>(p)->eventAttrib;
        break;
      case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        e.attributes = static_cast<const nvtxRangeStartEx_params*>(p)->eventAttrib;
        break;
      case CUPTI_CBID_NVTX_nvtxMarkEx:
        e.attributes = static_cast<const nvtxMarkEx_params*>(p)->eventAttrib;
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const auto* d = static_cast<const nvtxDomainRangePushEx_params*>(p);
        e = {cbid, d->domain, d->core.eventAttrib};
        break;
      }
      case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const auto* d = static_cast<const nvtxDomainRangeStartEx_params*>(p);
        e = {cbid, d->domain, d->core.eventAttrib};
        break;
      }
      case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
        const auto* d = static_cast<const nvtxDomainMarkEx_params*>(p);
        e = {cbid, d->domain, d->core.eventAttrib};
        break;
      }
      default:
        break;
    }
    if (e.attributes)
      for (uint16_t m = table_.nvtx_pushes; m; m &= uint16_t(m - 1))
        recorder_at_[__builtin_ctz(m)]->OnNvtxPush(e);
  }
  // The rest: --capture-range=nvtx:NAME's pushes and pops.
  if (options_.range != CaptureRange::kNvtx) return;
  const char* message = nullptr;
  bool push = false;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      push = true;
      message = static_cast<const nvtxRangePushA_params*>(data->functionParams)->message;
      break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
      push = true;
      const nvtxEventAttributes_t* a =
          cbid == CUPTI_CBID_NVTX_nvtxRangePushEx
              ? static_cast<const nvtxRangePushEx_params*>(data->functionParams)->eventAttrib
              : static_cast<const nvtxDomainRangePushEx_params*>(data->functionParams)
                    ->core.eventAttrib;
      if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) message = a->message.ascii;
      break;
    }
    default:
      break;
  }
  if (push) {
    ++t_nvtx_depth;
    if (message && options_.range_name == message && t_capture_depth < 0 && !range_done_.load()) {
      t_capture_depth = t_nvtx_depth;
      (void)SetActivities(true);
    }
    return;
  }
  if (cbid != CUPTI_CBID_NVTX_nvtxRangePop && cbid != CUPTI_CBID_NVTX_nvtxDomainRangePop)
    return;  // a range start or mark (given to the recorders above)
  if (t_nvtx_depth == t_capture_depth) {
    t_capture_depth = -1;
    (void)SetActivities(false);
    flush_requests_.fetch_add(1);
  }
  if (t_nvtx_depth > 0) --t_nvtx_depth;
}

void CuptiEngine::AbandonAfterFork() {
  // The child has a copy of our state but not our thread, and it shares the
  // parent's file descriptor: it must never write or flush.
  abandoned_ = true;
  running_ = false;
}

CaptureStats CuptiEngine::stats() const {
  CaptureStats s;
  s.records = records_.load();
  s.cupti_dropped = cupti_dropped_;
  s.buffers_refused = pool_.refused();
  s.module_loads = module_loads_.load();
  s.file_bytes = file_bytes_.load();
  return s;
}

// engine.h: the engine as session/ sees it.
Status StartCapture(const CaptureOptions& options, MakeRecordersFn make_recorders) {
  return CuptiEngine::Get().Start(options, make_recorders);
}
Status StopCapture() { return CuptiEngine::Get().Stop(); }
void StopCaptureFromSignal(int timeout_ms) { CuptiEngine::Get().StopFromSignal(timeout_ms); }
Status FlushCapture() { return CuptiEngine::Get().FlushNow(); }
void AbandonCaptureAfterFork() { CuptiEngine::Get().AbandonAfterFork(); }
void RecordDeviceMemoryUsed() { CuptiEngine::Get().RecordDeviceMemoryUsed(); }
std::string CaptureOutputPath() { return CuptiEngine::Get().output_path(); }
CaptureStats CurrentCaptureStats() { return CuptiEngine::Get().stats(); }

}  // namespace tracesmith::capture
