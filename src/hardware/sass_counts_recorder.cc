// Exact instruction counts (profile --sass-counts, issue #39 item 5): CUPTI's
// SASS metrics on every context, each function's executions per SASS
// instruction, by warps (smsp__sass_inst_executed) and by threads
// (smsp__sass_thread_inst_executed), without binary instrumentation of ours:
// CUPTI patches the kernels' code itself.
//
// The sequence (cupti_sass_metrics.h and CUPTI's sass_metrics sample):
//  - once per process, cuptiProfilerInitialize; once per device, at its
//    first context: cuptiProfilerDeviceSupported (why not, when not),
//    cuptiDeviceGetChipName, the metrics' ids (cuptiSassMetricsGetProperties)
//    and cuptiSassMetricsSetConfig at GPU granularity (one value per
//    instruction and metric, not one per SM);
//  - per context, in the context-created callback: cuptiSassMetricsEnable
//    with lazy patching (a function is patched at its first launch, not every
//    function of every module loaded);
//  - cuptiSassMetricsGetDataProperties then cuptiSassMetricsFlushData copy the
//    counts out and reset them: each instruction's total over every launch
//    since the last flush (no launch, no correlation id: the rows are
//    cumulative per function). Flushes happen where no kernel should run: at
//    the capture's edges (after cuCtxSynchronize, on the thread that starts
//    or stops the capture), before a context is destroyed, and at the final
//    write (what is left); then cuptiSassMetricsDisable, whose dropped records
//    (counts never flushed) are counted, and cuptiSassMetricsUnsetConfig.
// The function names CUPTI returns are ours to free.
// Source lines and the cubins saved for the CLI's SASS text: cubin_lines.h.
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cubin_lines.h"
#include "tracesmith/capture/live_contexts.h"
#include "tracesmith/capture/recorder.h"
#include "tracesmith/cuda/profiler_host.h"

namespace tracesmith::hardware {
namespace {

constexpr const char* kWarpMetric = "smsp__sass_inst_executed";
constexpr const char* kThreadMetric = "smsp__sass_thread_inst_executed";

// Why a CUPTI profiling call failed, in words a user can act on.
std::string Why(const char* call, CUptiResult r) {
  return cuda::ProfilingCallError(call, r,
                                  "this GPU or driver does not support CUPTI's SASS metrics");
}

// Why cuptiProfilerDeviceSupported says no; "" when it says yes.
std::string Unsupported(uint32_t device) {
  CUdevice dev = 0;
  if (cuDeviceGet(&dev, int(device)) != CUDA_SUCCESS) return "cuDeviceGet failed";
  CUpti_Profiler_DeviceSupported_Params p = {CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
  p.cuDevice = dev;
  p.api = CUPTI_PROFILER_SASS_METRICS;
  if (CUptiResult r = cuptiProfilerDeviceSupported(&p); r != CUPTI_SUCCESS)
    return Why("cuptiProfilerDeviceSupported", r);
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return "";
  std::string why = "this device does not support CUPTI's SASS metrics:";
  auto no = [](CUpti_Profiler_Support_Level l) {
    return l == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ||
           l == CUPTI_PROFILER_CONFIGURATION_DISABLED;
  };
  if (no(p.architecture)) why += " its architecture (compute capability 7.5 or later needed);";
  if (no(p.sli)) why += " SLI;";
  if (no(p.vGpu)) why += " a vGPU without profiling enabled;";
  if (no(p.confidentialCompute)) why += " confidential computing;";
  if (no(p.cmp)) why += " a crypto-mining processor;";
  if (no(p.wsl)) why += " WSL;";
  why.pop_back();
  return why;
}

struct Device {
  bool tried = false;
  std::string why_not;  // "" once configured
  bool set = false;     // configured, not yet unset
  uint64_t warp_id = 0, thread_id = 0;
  bool threads = false;  // the thread-level metric is collected
};

struct CountedContext {
  CUcontext ctx = nullptr;
  uint32_t device = 0;
  bool live = false;  // enabled and not yet disabled
};

// One instruction's counts before its strings are interned (Write).
using Key = std::tuple<uint32_t, uint64_t, std::string, uint32_t>;  // device, crc, function, pc
struct Counts {
  uint64_t executed = 0, threads = 0;
};

class SassCountsRecorder final : public capture::Recorder {
 public:
  SassCountsRecorder(uint32_t pid, bool quiet, std::string output_path)
      : pid_(pid), quiet_(quiet), output_path_(std::move(output_path)), lines_(pid) {}

  const char* name() const override { return "sasscounts"; }

  void Claim(capture::CallbackClaims& claims) override {
    claims.ContextCreated();
    claims.ContextDestroys();
    claims.ModuleLoads();
  }

  void OnContextCreated(CUcontext ctx) override { Enable(ctx, /*lazy=*/true); }

  // A new context's functions are patched as they load (lazy); one that
  // existed before an in-process capture started has its functions loaded
  // already (PyTorch's warm-up), so all are patched at once.
  void Enable(CUcontext ctx, bool lazy) {
    CountedContext c;
    c.ctx = ctx;
    cuptiGetDeviceId(ctx, &c.device);
    std::lock_guard<std::mutex> lock(mu_);
    for (const CUcontext seen : seen_)
      if (seen == ctx) return;  // once per context (the callback and the start's look)
    seen_.push_back(ctx);
    std::string why = Configure(c.device);
    if (why.empty()) {
      CUpti_SassMetricsEnable_Params ep = {CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
      ep.ctx = ctx;
      ep.enableLazyPatching = lazy ? 1 : 0;
      if (CUptiResult r = cuptiSassMetricsEnable(&ep); r != CUPTI_SUCCESS)
        why = Why("cuptiSassMetricsEnable", r);
    }
    if (!why.empty()) {
      ++enable_failures_;
      if (!quiet_)
        std::fprintf(stderr,
                     "tracesmith: exact instruction counts (--sass-counts) are off on device %u: "
                     "%s; the capture goes on without them\n",
                     c.device, why.c_str());
      return;
    }
    c.live = true;
    contexts_.push_back(c);
  }

  void OnContextDestroying(CUcontext ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (CountedContext& c : contexts_)
      if (c.ctx == ctx && c.live) FlushLocked(c, /*disable=*/true);
  }

  void OnModuleLoaded(CUcontext, const CUpti_ModuleResourceData& m) override { lines_.Keep(m); }

  // Start or stop (outside any callback): the counts so far, with no kernel
  // running. The first edge of an in-process capture is its start: the
  // contexts made before it are enabled here (live_contexts.h).
  void OnCaptureEdge() override {
    if (!edge_seen_) {
      edge_seen_ = true;
      bool none_seen = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        none_seen = seen_.empty();
      }
      if (none_seen)
        capture::ForEachLiveContext([this](CUcontext ctx) { Enable(ctx, /*lazy=*/false); });
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (CountedContext& c : contexts_) {
      if (!c.live || cuCtxPushCurrent(c.ctx) != CUDA_SUCCESS) continue;
      cuCtxSynchronize();
      FlushLocked(c, /*disable=*/false);
      CUcontext popped = nullptr;
      cuCtxPopCurrent(&popped);
    }
  }

  void Write(format::SbtWriter& sbt, bool final) override {
    std::map<Key, Counts> rows;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (final) {
        for (CountedContext& c : contexts_)
          if (c.live) FlushLocked(c, /*disable=*/true);
        for (auto& [device, d] : devices_)
          if (d.set) {
            CUpti_SassMetricsUnsetConfig_Params up = {
                CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
            up.deviceIndex = device;
            cuptiSassMetricsUnsetConfig(&up);
            d.set = false;
          }
      }
      rows.swap(pending_);
    }
    lines_.TakeKept();
    for (const auto& [key, n] : rows) {
      const auto& [device, crc, function, pc] = key;
      auto [it, fresh] = function_ids_.try_emplace(function, 0);
      if (fresh) it->second = sbt.InternString(function.empty() ? "(unknown function)" : function);
      lines_.WriteLine(sbt, crc, it->second, function.c_str(), pc);
      model::SassCount row;
      row.pc_offset = pc;
      row.executed = n.executed;
      row.thread_executed = n.threads;
      row.pid = pid_;
      row.device_id = device;
      row.cubin_crc = crc;
      row.function_id = it->second;
      sbt.Append(row);
      ++rows_;
      functions_[device].emplace(crc, it->second);
    }
    if (final) lines_.SaveReported(output_path_);
  }

  void WriteStats(capture::StatSink& stats) override {
    uint64_t functions = 0, threads = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [device, d] : devices_) threads |= d.threads;
      stats.Add("sass_counts.contexts", contexts_.size());
      stats.Add("sass_counts.enable_failures", enable_failures_, model::kStatWarning);
      stats.Add("sass_counts.flushes", flushes_);
      stats.Add("sass_counts.flush_errors", flush_errors_, model::kStatWarning);
      stats.Add("sass_counts.dropped_records", dropped_, model::kStatDataLoss);
    }
    for (const auto& [device, set] : functions_) functions += set.size();
    stats.Add("sass_counts.functions", functions);
    stats.Add("sass_counts.rows", rows_);
    stats.Add("sass_counts.thread_level", threads);
    lines_.WriteStats(stats, "sass_counts");
  }

 private:
  // The device's configuration, once; "" or why not (caller holds mu_).
  std::string Configure(uint32_t device) {
    Device& d = devices_[device];
    if (d.tried) return d.why_not;
    d.tried = true;
    d.why_not = ConfigureDevice(device, &d);
    return d.why_not;
  }

  std::string ConfigureDevice(uint32_t device, Device* d) {
    if (!profiler_initialized_) {
      CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
      if (CUptiResult r = cuptiProfilerInitialize(&ip); r != CUPTI_SUCCESS)
        return Why("cuptiProfilerInitialize", r);
      profiler_initialized_ = true;
    }
    if (std::string why = Unsupported(device); !why.empty()) return why;
    CUpti_Device_GetChipName_Params cp = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    cp.deviceIndex = device;
    if (CUptiResult r = cuptiDeviceGetChipName(&cp); r != CUPTI_SUCCESS)
      return Why("cuptiDeviceGetChipName", r);
    auto metric_id = [&](const char* name, uint64_t* id) {
      CUpti_SassMetrics_GetProperties_Params pp = {
          CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
      pp.pChipName = cp.pChipName;
      pp.pMetricName = name;
      CUptiResult r = cuptiSassMetricsGetProperties(&pp);
      *id = pp.metric.metricId;
      return r;
    };
    if (CUptiResult r = metric_id(kWarpMetric, &d->warp_id); r != CUPTI_SUCCESS)
      return Why("cuptiSassMetricsGetProperties(smsp__sass_inst_executed)", r);
    std::vector<CUpti_SassMetrics_Config> configs(1);
    configs[0].metricId = d->warp_id;
    configs[0].outputGranularity = CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU;
    // Thread-level executions when the chip has them (warp-level alone otherwise).
    if (metric_id(kThreadMetric, &d->thread_id) == CUPTI_SUCCESS && d->thread_id != d->warp_id) {
      configs.push_back({d->thread_id, uint8_t(CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU)});
      d->threads = true;
    }
    CUpti_SassMetricsSetConfig_Params sp = {CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    sp.numOfMetricConfig = configs.size();
    sp.pConfigs = configs.data();
    sp.deviceIndex = device;
    if (CUptiResult r = cuptiSassMetricsSetConfig(&sp); r != CUPTI_SUCCESS)
      return Why("cuptiSassMetricsSetConfig", r);
    d->set = true;
    return "";
  }

  // The counts since the last flush into pending_, then (`disable`) the end of
  // counting on the context (caller holds mu_).
  void FlushLocked(CountedContext& c, bool disable) {
    const Device& d = devices_[c.device];
    CUpti_SassMetricsGetDataProperties_Params gp = {
        CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    gp.ctx = c.ctx;
    if (CUptiResult r = cuptiSassMetricsGetDataProperties(&gp); r != CUPTI_SUCCESS) {
      ++flush_errors_;
    } else if (gp.numOfPatchedInstructionRecords && gp.numOfInstances) {
      const size_t n = gp.numOfPatchedInstructionRecords, per = gp.numOfInstances;
      std::vector<CUpti_SassMetrics_Data> data(n);
      std::vector<CUpti_SassMetrics_InstanceValue> values(n * per);
      for (size_t i = 0; i < n; ++i) {
        data[i].structSize = sizeof(CUpti_SassMetrics_Data);
        data[i].pInstanceValues = &values[i * per];
      }
      CUpti_SassMetricsFlushData_Params fp = {CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
      fp.ctx = c.ctx;
      fp.numOfPatchedInstructionRecords = n;
      fp.numOfInstances = per;
      fp.pMetricsData = data.data();
      if (cuptiSassMetricsFlushData(&fp) != CUPTI_SUCCESS) {
        ++flush_errors_;
      } else {
        ++flushes_;
        for (const CUpti_SassMetrics_Data& x : data) {
          Counts& out =
              pending_[Key{c.device, x.cubinCrc, x.functionName ? x.functionName : "", x.pcOffset}];
          // Each value names its metric: by warps or by threads, whatever the layout.
          for (size_t k = 0; k < per; ++k) {
            const CUpti_SassMetrics_InstanceValue& v = x.pInstanceValues[k];
            if (v.metricId == d.warp_id)
              out.executed += v.value;
            else if (d.threads && v.metricId == d.thread_id)
              out.threads += v.value;
          }
          std::free(const_cast<char*>(x.functionName));
        }
      }
    }
    if (!disable) return;
    c.live = false;
    CUpti_SassMetricsDisable_Params dp = {CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
    dp.ctx = c.ctx;
    if (cuptiSassMetricsDisable(&dp) == CUPTI_SUCCESS) dropped_ += dp.numOfDroppedRecords;
  }

  const uint32_t pid_;
  const bool quiet_;
  const std::string output_path_;
  CubinLines lines_;  // source lines, cubins kept and saved
  std::mutex mu_;     // devices_, contexts_, pending_, the counters (callbacks and the writer)
  bool profiler_initialized_ = false;
  std::map<uint32_t, Device> devices_;
  std::vector<CountedContext> contexts_;
  std::vector<CUcontext> seen_;  // every context Enable was given (mu_)
  bool edge_seen_ = false;       // OnCaptureEdge: the first edge was seen
  std::map<Key, Counts> pending_;
  uint64_t enable_failures_ = 0, flushes_ = 0, flush_errors_ = 0, dropped_ = 0;
  // Writer thread.
  std::unordered_map<std::string, uint32_t> function_ids_;
  std::map<uint32_t, std::set<std::pair<uint64_t, uint32_t>>> functions_;  // by device
  uint64_t rows_ = 0;
};

}  // namespace

std::unique_ptr<capture::Recorder> MakeSassCountsRecorder(const capture::RecorderContext& context) {
  if (!context.options || !context.options->sass_counts || !context.subscribed) return nullptr;
  return std::make_unique<SassCountsRecorder>(context.pid, context.options->quiet,
                                              context.output_path);
}

}  // namespace tracesmith::hardware
