// CUPTI PC sampling probe (issue #39): which continuous-mode configuration and drain sequence
// returns samples, from which kernels and stall reasons, and what it costs.
//
// Each configuration runs in its own child process (fresh context and CUPTI state; a hang or a
// crash costs one row): three kernels of known behaviour on two streams, 3 timed rounds of
// Iters() iterations, then the samples are drained and summarised. The parent prints a table.
// Usage: pc_sampling_probe [--only NAME[,NAME...]] [--list]. The configurations, the row a child
// reports and the parent are in pc_sampling_probe.h.
//
// cupti_pcsampling.h (13.0) says CUpti_PCSamplingPCData::correlationId is only set in
// kernel-serialized mode (0 in continuous): the probe counts it in both and matches it against
// the driver and runtime launch callbacks' correlation ids.
//
// Call sequence (CUPTI pc_sampling_continuous sample, cupti_pcsampling.h, Proton, HPCToolkit):
//   cuptiSubscribe + resource (context/module) and launch callbacks, before the context exists
//   cuptiPCSamplingEnable(ctx)   (at CONTEXT_CREATED, after cudaFree(0), or after kernels ran)
//   cuptiPCSamplingGetNumStallReasons / GetStallReasons   (only after Enable)
//   cuptiPCSamplingSetConfigurationAttribute: mode, all stall reasons, data buffer, start/stop 0,
//     PARSED, optional period (2^N cycles, N in [5,31]), scratch/hardware buffer, worker sleep span
//   cuptiPCSamplingGetData: drain thread every kDrainMs, at module load, at launch exit (variants),
//     and after the last sync until nothing arrives for kTailIdleMs (CUPTI decodes asynchronously)
//   cuptiPCSamplingDisable: flushes the remaining records into the configuration buffer
#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "check.h"
#include "pc_sampling_kernels.cuh"
#include "pc_sampling_probe.h"

namespace {
using namespace pcprobe;

// ---- child state -----------------------------------------------------------------------------
const Cfg* g_cfg = nullptr;
char g_tag[40] = "probe";
const char* volatile g_phase = "start";
Row g_row;
CUcontext g_ctx = nullptr;
std::atomic<bool> g_enabled{false}, g_stop{false};
std::mutex g_mu;     // GetData calls and accumulation
std::mutex g_symMu;  // launch maps and config-buffer maxima (taken after g_mu, never before)
CUpti_PCSamplingData g_cfgBuf, g_drainBuf;
std::vector<std::string> g_reasonName;          // by position
std::vector<int> g_reasonKind;                  // 0 stall reason, 1 *_not_issued, 2 other
std::unordered_map<uint32_t, int> g_reasonPos;  // CUPTI stall reason index -> position
std::vector<uint32_t> g_reasonIdx;              // CUPTI indices, for the configuration
std::vector<std::vector<char>> g_cubins;        // copied at MODULE_LOADED
std::unordered_map<uint32_t, std::string> g_drvSym, g_rtSym;  // launch correlation id -> kernel
std::map<std::string, int> g_errCount;
std::mutex g_errMu;
size_t g_cfgTotalMax = 0, g_cfgRemainMax = 0;
double g_getDataMaxMs = 0;
uint64_t g_maxRange = 0;
unsigned g_nonEmpty = 0;
int g_sms = 0, g_khz = 0;

struct FnAcc {
  uint64_t samples = 0, records = 0, crc = 0;
  int corrNonzero = 0, corrDrv = 0, corrRt = 0;
  std::vector<uint64_t> reason;
  std::map<uint64_t, uint64_t> pcs;  // pcOffset -> samples
};
std::map<std::string, FnAcc> g_fns;

bool ck(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  std::lock_guard<std::mutex> lock(g_errMu);
  int n = ++g_errCount[what];
  ++g_row.cuptiErrors;
  if (n <= 3) std::printf("[%s]   %s failed: %s (%d)\n", g_tag, what, s ? s : "?", int(r));
  return false;
}

int kernel_of(const std::string& fn) {
  for (int k = 0; k < 3; ++k)
    if (fn.find(kKernelNames[k]) != std::string::npos) return k;
  return 3;
}

void alloc_buf(CUpti_PCSamplingData& d, size_t pcs) {
  std::memset(&d, 0, sizeof d);
  d.size = sizeof(CUpti_PCSamplingData);
  d.collectNumPcs = pcs;
  d.pPcData = static_cast<CUpti_PCSamplingPCData*>(calloc(pcs, sizeof(CUpti_PCSamplingPCData)));
  for (size_t i = 0; i < pcs; ++i) {
    d.pPcData[i].size = sizeof(CUpti_PCSamplingPCData);
    d.pPcData[i].stallReason = static_cast<CUpti_PCSamplingStallReason*>(
        calloc(g_reasonName.size() + 1, sizeof(CUpti_PCSamplingStallReason)));
  }
}

// Adds one buffer's records (caller holds g_mu). functionName strings are CUPTI's and may be
// shared between records, so they are copied and never freed here (a bounded leak in a probe).
void accumulate(const CUpti_PCSamplingData& d, Phase ph) {
  g_row.total += d.totalSamples;
  g_row.dropped += d.droppedSamples;
  g_row.nonUsr += d.nonUsrKernelsTotalSamples;
  g_maxRange = std::max<uint64_t>(g_maxRange, d.rangeId);
  size_t n = std::min(d.totalNumPcs, d.collectNumPcs);
  if (n) ++g_nonEmpty;
  for (size_t i = 0; i < n; ++i) {
    const CUpti_PCSamplingPCData& pc = d.pPcData[i];
    std::string name = pc.functionName ? pc.functionName : "(null)";
    FnAcc& f = g_fns[name];
    f.reason.resize(g_reasonName.size());
    f.crc = pc.cubinCrc;
    uint64_t s = 0;
    for (size_t j = 0; j < pc.stallReasonCount; ++j) {
      auto it = g_reasonPos.find(pc.stallReason[j].pcSamplingStallReasonIndex);
      if (it == g_reasonPos.end()) continue;
      f.reason[it->second] += pc.stallReason[j].samples;
      if (g_reasonKind[it->second] == 0) s += pc.stallReason[j].samples;
    }
    ++f.records;
    ++g_row.records;
    f.samples += s;
    f.pcs[pc.pcOffset] += s;
    g_row.sumMain += s;
    g_row.phase[ph] += s;
    g_row.fn[kernel_of(name)] += s;
    if (pc.correlationId) {
      ++f.corrNonzero;
      std::lock_guard<std::mutex> sym(g_symMu);
      auto a = g_drvSym.find(pc.correlationId), b = g_rtSym.find(pc.correlationId);
      if (a != g_drvSym.end() && a->second == name) ++f.corrDrv;
      if (b != g_rtSym.end() && b->second == name) ++f.corrRt;
    }
  }
}

// One cuptiPCSamplingGetData into the drain buffer; returns whether anything came back.
bool get_data(CUcontext ctx, Phase ph) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_drainBuf.totalNumPcs = g_drainBuf.remainingNumPcs = 0;
  g_drainBuf.totalSamples = g_drainBuf.droppedSamples = g_drainBuf.nonUsrKernelsTotalSamples = 0;
  g_drainBuf.hardwareBufferFull = 0;
  CUpti_PCSamplingGetDataParams p = {};
  p.size = CUpti_PCSamplingGetDataParamsSize;
  p.ctx = ctx;
  p.pcSamplingData = &g_drainBuf;
  double t = now_ms();
  CUptiResult r = cuptiPCSamplingGetData(&p);
  t = now_ms() - t;
  ++g_row.getDataCalls;
  g_row.getDataMs += t;
  g_getDataMaxMs = std::max(g_getDataMaxMs, t);
  {
    std::lock_guard<std::mutex> sym(g_symMu);
    g_cfgTotalMax = std::max(g_cfgTotalMax, g_cfgBuf.totalNumPcs);
    g_cfgRemainMax = std::max(g_cfgRemainMax, g_cfgBuf.remainingNumPcs);
  }
  if (g_drainBuf.hardwareBufferFull) ++g_row.hwFull;
  if (r != CUPTI_SUCCESS) {
    ++g_row.getDataErrors;
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    if (g_row.getDataErrors <= 3)
      std::printf("[%s]   cuptiPCSamplingGetData (%s) failed: %s (%d), hardwareBufferFull=%d\n",
                  g_tag, kPhaseNames[ph], s ? s : "?", int(r), int(g_drainBuf.hardwareBufferFull));
  }
  accumulate(g_drainBuf, ph);
  return g_drainBuf.totalNumPcs > 0 || g_drainBuf.totalSamples > 0;
}

bool drain_all(CUcontext ctx, Phase ph) {
  bool any = false;
  for (int k = 0; k < 32; ++k) {
    any |= get_data(ctx, ph);
    if (g_drainBuf.remainingNumPcs == 0) break;
  }
  return any;
}

CUpti_PCSamplingConfigurationInfo attr(CUpti_PCSamplingConfigurationAttributeType t) {
  CUpti_PCSamplingConfigurationInfo a;
  std::memset(&a, 0, sizeof a);
  a.attributeType = t;
  return a;
}

const char* attr_name(int t) {
  static const char* const n[] = {"invalid",     "period",    "stall-reasons", "scratch-buffer",
                                  "hw-buffer",   "mode",      "start-stop",    "output-format",
                                  "data-buffer", "sleep-span"};
  return t >= 0 && t < 10 ? n[t] : "?";
}

CUptiResult set_attrs(CUcontext ctx, std::vector<CUpti_PCSamplingConfigurationInfo>& v, bool get) {
  CUpti_PCSamplingConfigurationInfoParams p = {};
  p.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  p.ctx = ctx;
  p.numAttributes = v.size();
  p.pPCSamplingConfigurationInfo = v.data();
  return get ? cuptiPCSamplingGetConfigurationAttribute(&p)
             : cuptiPCSamplingSetConfigurationAttribute(&p);
}

// Enable, then stall reasons (only valid after Enable), then one configuration call.
void enable_and_configure(CUcontext ctx) {
  const Cfg& c = *g_cfg;
  const char* where[] = {"CONTEXT_CREATED callback", "after cudaFree(0), before any kernel",
                         "after the warm-up kernels ran"};
  g_phase = "cuptiPCSamplingEnable";
  double t0 = now_ms();
  CUpti_PCSamplingEnableParams ep = {};
  ep.size = CUpti_PCSamplingEnableParamsSize;
  ep.ctx = ctx;
  if (!ck(cuptiPCSamplingEnable(&ep), "cuptiPCSamplingEnable")) return;
  g_row.enableOk = 1;
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np = {};
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = ctx;
  np.numStallReasons = &n;
  if (!ck(cuptiPCSamplingGetNumStallReasons(&np), "cuptiPCSamplingGetNumStallReasons")) return;
  std::vector<std::vector<char>> store(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, 0));
  std::vector<char*> names(n);
  for (size_t i = 0; i < n; ++i) names[i] = store[i].data();
  g_reasonIdx.assign(n, 0);
  CUpti_PCSamplingGetStallReasonsParams sp = {};
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = ctx;
  sp.numStallReasons = n;
  sp.stallReasonIndex = g_reasonIdx.data();
  sp.stallReasons = names.data();
  if (!ck(cuptiPCSamplingGetStallReasons(&sp), "cuptiPCSamplingGetStallReasons")) return;
  for (size_t i = 0; i < n; ++i) {
    std::string s = names[i];
    const char* pre = "smsp__pcsamp_warps_issue_stalled_";
    int kind = s.find(pre) == 0 ? 0 : 2;
    if (kind == 0) s = s.substr(std::strlen(pre));
    if (s.find("not_issued") != std::string::npos) kind = 1;
    if (kind == 2 && s.find("smsp__pcsamp_") == 0) s = s.substr(13);
    g_reasonPos[g_reasonIdx[i]] = int(i);
    g_reasonName.push_back(s);
    g_reasonKind.push_back(kind);
  }
  if (std::strcmp(c.name, "default") == 0) {  // the list once
    std::printf(
        "[%s] %zu stall reasons (index:name; per-PC samples = sum of the plain ones):", g_tag, n);
    for (size_t i = 0; i < n; ++i)
      std::printf("%s %u:%s", i % 6 ? "" : "\n[default]  ", g_reasonIdx[i],
                  g_reasonName[i].c_str());
    std::printf("\n");
  }
  alloc_buf(g_cfgBuf, kCfgBufPcs);
  alloc_buf(g_drainBuf, kDrainBufPcs);

  std::vector<CUpti_PCSamplingConfigurationInfo> v;
  v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE));
  v.back().attributeData.collectionModeData.collectionMode =
      c.mode == 2 ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
                  : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON));
  v.back().attributeData.stallReasonData.stallReasonCount = n;
  v.back().attributeData.stallReasonData.pStallReasonIndex = g_reasonIdx.data();
  v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER));
  v.back().attributeData.samplingDataBufferData.samplingDataBuffer = &g_cfgBuf;
  v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL));
  v.back().attributeData.enableStartStopControlData.enableStartStopControl = 0;
  v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT));
  v.back().attributeData.outputDataFormatData.outputDataFormat =
      CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  if (c.period) {
    v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD));
    v.back().attributeData.samplingPeriodData.samplingPeriod = c.period;
  }
  if (c.scratchKiB) {
    v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE));
    v.back().attributeData.scratchBufferSizeData.scratchBufferSize = c.scratchKiB << 10;
  }
  if (c.hwMiB) {
    v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE));
    v.back().attributeData.hardwareBufferSizeData.hardwareBufferSize = c.hwMiB << 20;
  }
  if (c.sleepMs) {
    v.push_back(attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN));
    v.back().attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
        c.sleepMs;
  }
  g_phase = "cuptiPCSamplingSetConfigurationAttribute";
  if (ck(set_attrs(ctx, v, false), "cuptiPCSamplingSetConfigurationAttribute")) {
    g_row.configOk = 1;
  } else {  // which attribute: its status, then each one alone
    int ok = 0;
    for (auto& a : v) {
      std::vector<CUpti_PCSamplingConfigurationInfo> one{a};
      CUptiResult r = set_attrs(ctx, one, false);
      const char* s = nullptr;
      cuptiGetResultString(r, &s);
      std::printf("[%s]   attribute %-14s status in batch %d, alone: %s\n", g_tag,
                  attr_name(a.attributeType), int(a.attributeStatus), s ? s : "?");
      ok += r == CUPTI_SUCCESS;
    }
    g_row.configOk = ok == int(v.size()) ? 1 : ok ? 2 : 0;
  }
  std::vector<CUpti_PCSamplingConfigurationInfo> q = {
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD),
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE),
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE),
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN),
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE),
      attr(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)};
  if (!ck(set_attrs(ctx, q, true), "cuptiPCSamplingGetConfigurationAttribute"))
    for (auto& a : q) {  // one at a time, so the readable ones still show
      std::vector<CUpti_PCSamplingConfigurationInfo> one{a};
      if (set_attrs(ctx, one, true) == CUPTI_SUCCESS) a = one[0];
    }
  g_row.effPeriod = q[0].attributeData.samplingPeriodData.samplingPeriod;
  g_row.effScratch = q[1].attributeData.scratchBufferSizeData.scratchBufferSize;
  g_row.effHw = q[2].attributeData.hardwareBufferSizeData.hardwareBufferSize;
  g_row.effSleep =
      q[3].attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan;
  std::printf(
      "[%s] enabled %s in %.0f ms: config %s; effective period 2^%u, scratch %llu KiB, hw %llu "
      "MiB, sleep %u ms, mode %d, start/stop %u\n",
      g_tag, where[c.at], now_ms() - t0, g_row.configOk == 1 ? "ok" : "FAILED", g_row.effPeriod,
      g_row.effScratch >> 10, g_row.effHw >> 20, g_row.effSleep,
      int(q[4].attributeData.collectionModeData.collectionMode),
      q[5].attributeData.enableStartStopControlData.enableStartStopControl);
  g_enabled = g_row.configOk != 0;
}

void CUPTIAPI on_cupti(void*, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void* data) {
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* rd = static_cast<const CUpti_ResourceData*>(data);
    if (id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
      if (!g_ctx) g_ctx = rd->context;
      if (g_cfg->kind == PCS && g_cfg->at == AT_CTX_CB) enable_and_configure(rd->context);
    } else if (id == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      const auto* m = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
      if (m && m->pCubin && m->cubinSize) {
        std::lock_guard<std::mutex> lock(g_mu);
        g_cubins.emplace_back(m->pCubin, m->pCubin + m->cubinSize);
      }
      if (g_enabled) drain_all(rd->context, PH_MODLOAD);  // as the CUPTI sample does
    } else if (g_enabled) {  // module unload / context destroy: flush before it goes
      drain_all(rd->context, PH_MODLOAD);
    }
    return;
  }
  const auto* cd = static_cast<const CUpti_CallbackData*>(data);
  if (cd->callbackSite != CUPTI_API_EXIT) return;
  {  // not g_mu: a launch must not wait for the drain thread's GetData
    std::lock_guard<std::mutex> lock(g_symMu);
    (dom == CUPTI_CB_DOMAIN_DRIVER_API ? g_drvSym : g_rtSym)[cd->correlationId] =
        cd->symbolName ? cd->symbolName : "";
    g_cfgTotalMax = std::max(g_cfgTotalMax, g_cfgBuf.totalNumPcs);
    g_cfgRemainMax = std::max(g_cfgRemainMax, g_cfgBuf.remainingNumPcs);
  }
  if (dom != CUPTI_CB_DOMAIN_DRIVER_API) return;
  ++g_row.launches;
  if (!g_enabled) return;
  // Kernel-serialized: each kernel is a range, drained at its launch exit. Continuous with
  // drain=LAUNCH: drain when CUPTI says records are waiting (the sample's threshold is a
  // buffer's worth; 1 here, so the difference shows in a short run).
  if (g_cfg->mode == 2 ||
      (g_cfg->drain == LAUNCH && (g_cfgBuf.remainingNumPcs > 0 || g_cfgBuf.totalNumPcs > 0)))
    drain_all(cd->context, PH_LAUNCH);
}

void subscribe() {
  CUpti_SubscriberHandle sub;
  if (!ck(cuptiSubscribe(&sub, on_cupti, nullptr), "cuptiSubscribe")) return;
  for (CUpti_CallbackId id :
       {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING})
    ck(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, id), "cuptiEnableCallback(resource)");
  for (CUpti_CallbackId id :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunch, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz})
    ck(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback(driver)");
  for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000})
    ck(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id),
       "cuptiEnableCallback(runtime)");
}

// ---- workload --------------------------------------------------------------------------------
struct Work {
  float *buf, *outm, *outf;
  unsigned* outh;
  cudaStream_t s[2];
  int blocks;
};

void launch_one(const Work& w, int k, cudaStream_t s) {
  if (k == 0) pcs_mem<<<w.blocks, kThreads, 0, s>>>(w.buf, kMemMask, kMemIters, w.outm);
  if (k == 1) pcs_fma<<<w.blocks, kThreads, 0, s>>>(w.outf, kFmaIters, 0.9999f, 1e-4f);
  if (k == 2) pcs_hot<<<w.blocks, kThreads, 0, s>>>(w.outh, kHotIters);
}
// One iteration: mem on stream 0, fma on stream 1, hot alternating, so all three overlap.
void launch_iter(const Work& w, int i) {
  launch_one(w, 0, w.s[0]);
  launch_one(w, 1, w.s[1]);
  launch_one(w, 2, w.s[i & 1]);
}

void print_device() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  int drv = 0, rt = 0, khz = 0;
  uint32_t cupti = 0;
  cuDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  ck(cuptiGetVersion(&cupti), "cuptiGetVersion");
  CUmoduleLoadingMode lm = CU_MODULE_EAGER_LOADING;
  cuModuleGetLoadingMode(&lm);
  char nv[256] = "?";
  if (FILE* f = std::fopen("/proc/driver/nvidia/version", "r")) {
    if (!std::fgets(nv, sizeof nv, f)) std::strcpy(nv, "?");
    std::fclose(f);
    nv[strcspn(nv, "\n")] = 0;
  }
  const char* env = std::getenv("CUDA_MODULE_LOADING");
  std::printf(
      "device: %s sm_%d%d, %d SMs, %d MHz | driver API %d, runtime %d | CUPTI %u (headers %d) | "
      "module loading %s (CUDA_MODULE_LOADING=%s)\ndriver: %s\n",
      p.name, p.major, p.minor, p.multiProcessorCount, khz / 1000, drv, rt, cupti,
      CUPTI_API_VERSION, lm == CU_MODULE_LAZY_LOADING ? "lazy" : "eager", env ? env : "unset", nv);
}

// Baseline only: each kernel's GPU time inside the concurrent loop (events around each launch)
// and alone, so sample shares can be compared with time shares.
void kernel_times(const Work& w) {
  constexpr int kN = 50;
  std::vector<cudaEvent_t> ev(kN * 6);
  for (auto& e : ev) CHECK(cudaEventCreate(&e));
  for (int i = 0; i < kN; ++i)
    for (int k = 0; k < 3; ++k) {
      cudaStream_t s = k == 2 ? w.s[i & 1] : w.s[k];
      CHECK(cudaEventRecord(ev[i * 6 + k * 2], s));
      launch_one(w, k, s);
      CHECK(cudaEventRecord(ev[i * 6 + k * 2 + 1], s));
    }
  CHECK(cudaDeviceSynchronize());
  double solo[3];
  for (int k = 0; k < 3; ++k) {
    float ms = 0;
    for (int i = 0; i < kN; ++i) {
      CHECK(cudaEventElapsedTime(&ms, ev[i * 6 + k * 2], ev[i * 6 + k * 2 + 1]));
      g_row.gpuMs[k] += ms;
    }
    CHECK(cudaEventRecord(ev[0], w.s[0]));
    for (int i = 0; i < 20; ++i) launch_one(w, k, w.s[0]);
    CHECK(cudaEventRecord(ev[1], w.s[0]));
    CHECK(cudaEventSynchronize(ev[1]));
    CHECK(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    solo[k] = ms * 1000.0 / 20;
  }
  double sum = g_row.gpuMs[0] + g_row.gpuMs[1] + g_row.gpuMs[2];
  std::printf("[%s] kernel GPU time in the concurrent loop (share) / alone per launch:", g_tag);
  for (int k = 0; k < 3; ++k)
    std::printf(" %s %.1f%% / %.0f us;", kKernelNames[k], 100 * g_row.gpuMs[k] / sum, solo[k]);
  std::printf("\n");
  for (auto& e : ev) CHECK(cudaEventDestroy(e));
}

// file:line of a pcOffset, from the copied cubins (the one whose CRC matches first).
std::string source_line(const std::string& fn, uint64_t crc, uint64_t off, int* line) {
  static std::unordered_map<uint64_t, std::pair<std::string, int>> cache;
  auto c = cache.find(off);
  if (c != cache.end()) {
    *line = c->second.second;
    return c->second.first;
  }
  std::string best = "?";
  *line = 0;
  static std::vector<uint64_t> crcs;
  for (size_t i = crcs.size(); i < g_cubins.size(); ++i) {
    CUpti_GetCubinCrcParams cp = {};
    cp.size = CUpti_GetCubinCrcParamsSize;
    cp.cubin = g_cubins[i].data();
    cp.cubinSize = g_cubins[i].size();
    crcs.push_back(cuptiGetCubinCrc(&cp) == CUPTI_SUCCESS ? cp.cubinCrc : 0);
  }
  std::vector<size_t> order;  // the cubin whose CRC is the record's first
  for (size_t i = 0; i < g_cubins.size(); ++i)
    order.insert(crcs[i] == crc ? order.begin() : order.end(), i);
  CUptiResult last = CUPTI_SUCCESS;
  for (size_t i : order) {
    CUpti_GetSassToSourceCorrelationParams p = {};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = g_cubins[i].data();
    p.cubinSize = g_cubins[i].size();
    p.functionName = fn.c_str();
    p.pcOffset = off;
    last = cuptiGetSassToSourceCorrelation(&p);
    if (last == CUPTI_SUCCESS) {
      const char* f = p.fileName ? std::strrchr(p.fileName, '/') : nullptr;
      best = std::string(f            ? f + 1
                         : p.fileName ? p.fileName
                                      : "?") +
             ":" + std::to_string(p.lineNumber);
      *line = int(p.lineNumber);
      free(p.fileName);
      free(p.dirName);
      break;
    }
  }
  if (best == "?" && last != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(last, &s);
    best = std::string("?(") + (s ? s : "?") + ")";
  }
  cache[off] = {best, *line};
  return best;
}

void report() {
  const Row& r = g_row;
  std::printf(
      "[%s] samples: total %llu, dropped %llu, non-user %llu, hwBufferFull %llu | %llu PC records, "
      "%llu per-PC samples (",
      g_tag, r.total, r.dropped, r.nonUsr, r.hwFull, r.records, r.sumMain);
  for (int p = 0; p < 5; ++p) std::printf("%s%s %llu", p ? ", " : "", kPhaseNames[p], r.phase[p]);
  std::printf(
      ")\n[%s] GetData: %u calls (%u non-empty, %u errors), %.1f ms total, max %.2f ms | tail "
      "data until +%.0f ms | disable %.0f ms | max rangeId %llu | config buffer seen: "
      "totalNumPcs<=%zu remainingNumPcs<=%zu | launches seen %u, cubins %zu\n",
      g_tag, r.getDataCalls, g_nonEmpty, r.getDataErrors, r.getDataMs, g_getDataMaxMs, r.tailMs,
      r.disableMs, (unsigned long long)g_maxRange, g_cfgTotalMax, g_cfgRemainMax, r.launches,
      g_cubins.size());
  double secs = 0, user = double(r.total) - double(r.dropped) - double(r.nonUsr);
  for (double t : r.roundMs) secs += t / 1000;
  if (r.effPeriod && g_sms && g_khz && secs > 0)
    std::printf(
        "[%s] density: %.2f samples per SM per 2^%u cycles of timed-round wall time (1: one "
        "sampler per SM, 4: one per SM sub-partition); per-PC samples / (total - dropped - "
        "non-user) = %.3f\n",
        g_tag, r.total / (g_sms * (g_khz * 1e3) * secs / double(1ull << r.effPeriod)), r.effPeriod,
        user > 0 ? r.sumMain / user : 0.0);
  for (auto& entry : g_fns) {
    const std::string& name = entry.first;
    FnAcc& f = entry.second;
    int k = kernel_of(name);
    std::vector<size_t> order;
    for (size_t i = 0; i < f.reason.size(); ++i)
      if (g_reasonKind[i] == 0 && f.reason[i]) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return f.reason[a] > f.reason[b]; });
    std::printf(
        "[%s] %-44.44s %5.1f%% of samples, %llu records, corrId!=0 %d (= launch's: "
        "driver id %d, runtime id %d); top stalls:",
        g_tag, name.c_str(), r.sumMain ? 100.0 * f.samples / r.sumMain : 0.0,
        (unsigned long long)f.records, f.corrNonzero, f.corrDrv, f.corrRt);
    for (size_t j = 0; j < order.size() && j < 3; ++j)
      std::printf(" %s %.1f%%", g_reasonName[order[j]].c_str(),
                  f.samples ? 100.0 * f.reason[order[j]] / f.samples : 0.0);
    std::printf("\n");
    g_row.corrNonzero += f.corrNonzero;
    g_row.corrMatch += std::max(f.corrDrv, f.corrRt);
    if (k < 3 && !order.empty())
      std::snprintf(g_row.top[k], sizeof g_row.top[k], "%s", g_reasonName[order[0]].c_str());
    if (k != 2 || !f.samples) continue;
    std::vector<std::pair<uint64_t, uint64_t>> pcs(f.pcs.begin(), f.pcs.end());
    std::sort(pcs.begin(), pcs.end(), [](auto& a, auto& b) { return a.second > b.second; });
    std::map<int, uint64_t> lines;
    int line = 0;
    for (auto& [off, s] : pcs) {
      source_line(name, f.crc, off, &line);
      lines[line] += s;
    }
    std::printf("[%s]   hot pcOffsets:", g_tag);
    for (size_t j = 0; j < pcs.size() && j < 5; ++j)
      std::printf(" 0x%llx %.1f%% (%s)", (unsigned long long)pcs[j].first,
                  100.0 * pcs[j].second / f.samples,
                  source_line(name, f.crc, pcs[j].first, &line).c_str());
    g_row.hotLinePct = 100.0 * lines[kHotLine] / f.samples;
    std::printf("\n[%s]   by line:", g_tag);
    for (auto& [l, s] : lines) std::printf(" %d: %.1f%%", l, 100.0 * s / f.samples);
    std::printf("  (hot loop is line %d: %.1f%%)\n", kHotLine, g_row.hotLinePct);
  }
  for (auto& [what, n] : g_errCount)
    if (n > 3) std::printf("[%s]   %s failed %d times in all\n", g_tag, what.c_str(), n);
}

void finish_sampling(CUcontext ctx) {
  g_phase = "tail drain (GetData until idle)";
  double t0 = now_ms(), last = t0;
  while (now_ms() - last < kTailIdleMs && now_ms() - t0 < kTailMaxMs) {
    if (drain_all(ctx, PH_TAIL)) last = now_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  g_row.tailMs = last - t0;
  g_phase = "cuptiPCSamplingDisable";
  g_enabled = false;
  double t1 = now_ms();
  CUpti_PCSamplingDisableParams dp = {};
  dp.size = CUpti_PCSamplingDisableParamsSize;
  dp.ctx = ctx;
  bool ok = ck(cuptiPCSamplingDisable(&dp), "cuptiPCSamplingDisable");
  g_row.disableMs = now_ms() - t1;
  std::lock_guard<std::mutex> lock(g_mu);
  if (ok && g_cfgBuf.totalNumPcs) accumulate(g_cfgBuf, PH_DISABLE);
  if (g_cfgBuf.remainingNumPcs)
    std::printf("[%s]   %zu records discarded at disable (configuration buffer full)\n", g_tag,
                g_cfgBuf.remainingNumPcs);
}

void child_alarm(int) {
  const char* p = g_phase;
  auto w = [](const char* s) { (void)!write(1, s, std::strlen(s)); };
  w("[");
  w(g_tag);
  w("] TIMEOUT in phase: ");
  w(p);
  w("\n");
  _exit(3);
}

int child_main(int idx, int fd, bool first) {
  const Cfg& c = kCfgs[idx];
  g_cfg = &c;
  std::snprintf(g_tag, sizeof g_tag, "%s", c.name);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGALRM, child_alarm);
  alarm(kChildLimitS - 3);
  std::memset(&g_row, 0, sizeof g_row);
  if (c.kind != BASE) subscribe();
  g_phase = "cudaFree(0)";
  CHECK(cudaFree(0));
  CUcontext ctx = nullptr;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  if (first) print_device();
  if (c.kind == PCS && c.at == AT_START) enable_and_configure(ctx);
  g_phase = "setup";
  Work w;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaDeviceGetAttribute(&g_khz, cudaDevAttrClockRate, 0));
  g_sms = sms;
  w.blocks = 2 * sms;
  size_t outs = size_t(w.blocks) * kThreads;
  CHECK(cudaMalloc(&w.buf, (size_t(kMemMask) + 1) * sizeof(float)));
  CHECK(cudaMemset(w.buf, 0, (size_t(kMemMask) + 1) * sizeof(float)));
  CHECK(cudaMalloc(&w.outm, outs * sizeof(float)));
  CHECK(cudaMalloc(&w.outf, outs * sizeof(float)));
  CHECK(cudaMalloc(&w.outh, outs * sizeof(unsigned)));
  for (auto& s : w.s) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  g_phase = "warm-up";
  launch_iter(w, 0);
  CHECK(cudaDeviceSynchronize());
  if (c.kind == PCS && c.at == AT_LATE) enable_and_configure(ctx);
  std::thread drainer;
  if (c.kind == PCS && g_enabled && c.drain == THREAD && c.mode == 1)
    drainer = std::thread([ctx] {
      cuCtxSetCurrent(ctx);
      while (!g_stop) {
        std::this_thread::sleep_for(std::chrono::milliseconds(kDrainMs));
        drain_all(ctx, PH_RUN);
      }
    });
  g_phase = "timed rounds";
  double enq[kRounds], sorted[kRounds], start = now_ms();
  int rounds = 0;
  while (rounds < kRounds && now_ms() - start < kRoundsMaxMs) {  // fewer rounds when very slow
    double t0 = now_ms();
    for (int i = 0, n = Iters(); i < n; ++i) launch_iter(w, i);
    enq[rounds] = now_ms() - t0;
    CHECK(cudaDeviceSynchronize());
    sorted[rounds] = g_row.roundMs[rounds] = now_ms() - t0;
    ++rounds;
  }
  g_stop = true;
  if (drainer.joinable()) drainer.join();
  std::sort(sorted, sorted + rounds);
  g_row.medMs = sorted[rounds / 2];
  std::sort(enq, enq + rounds);
  g_row.enqMs = enq[rounds / 2];
  std::printf("[%s] rounds (ms):", g_tag);
  for (int r = 0; r < rounds; ++r) std::printf(" %.1f", g_row.roundMs[r]);
  std::printf(" | host enqueue median %.1f ms", g_row.enqMs);
  if (c.kind != BASE) std::printf(" | launch callbacks %u", g_row.launches);
  std::printf("\n");
  if (c.kind == BASE) kernel_times(w);
  if (c.kind == PCS && g_row.enableOk) {
    if (g_enabled) finish_sampling(ctx);
    report();
  }
  (void)!write(fd, &g_row, sizeof g_row);
  std::fflush(stdout);
  _exit(0);  // no CUDA/CUPTI teardown: sampling is already disabled and drained
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--child") == 0)
    return child_main(std::atoi(argv[2]), std::atoi(argv[3]), argv[4][0] != 0);
  return pcprobe::parent_main(argc, argv, kHotLine);
}
