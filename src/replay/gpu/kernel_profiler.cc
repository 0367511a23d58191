#include "kernel_profiler.h"

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include "tracesmith/cuda/profiler_host.h"

namespace tracesmith::replay::gpu {
namespace {

Status Cupti(const char* call, CUptiResult r) {
  return cuda::ProfilingCallStatus(call, r, kRangeProfilerUnsupported);
}

}  // namespace

KernelProfiler::~KernelProfiler() {
  if (profiler_) {
    TS_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, p);
    p.pRangeProfilerObject = profiler_;
    cuptiRangeProfilerDisable(&p);
  }
  host_.End();
}

Status KernelProfiler::Open(CUcontext ctx, int device, const std::vector<std::string>& names) {
  TS_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params, ip);
  RETURN_IF_ERROR(Cupti("cuptiProfilerInitialize", cuptiProfilerInitialize(&ip)));
  RETURN_IF_ERROR(host_.ReadChip(size_t(device)));
  TS_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ap);
  ap.ctx = ctx;
  RETURN_IF_ERROR(host_.ReadAvailability("cuptiProfilerGetCounterAvailability",
                                         &cuptiProfilerGetCounterAvailability, ap));
  constexpr CUpti_ProfilerType kRange = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  // Each name alone (ConfigAddMetrics only adds: one host object per try).
  kept_.clear();
  dropped_.clear();
  for (const std::string& n : names) {
    RETURN_IF_ERROR(host_.Begin(kRange));
    (host_.AddMetrics({n.c_str()}).ok() ? kept_ : dropped_).push_back(n);
  }
  if (kept_.empty()) {
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "" : ", ") + n;
    return InvalidArgument("--metrics: the GPU's profiler (" + host_.chip() +
                           ") knows none of these metric names: " + all +
                           " (Nsight Compute's names: ncu --query-metrics)");
  }
  names_.clear();
  for (const std::string& n : kept_) names_.push_back(n.c_str());
  RETURN_IF_ERROR(host_.Begin(kRange));
  RETURN_IF_ERROR(host_.AddMetrics(names_));
  RETURN_IF_ERROR(host_.MakeConfigImage());
  ASSIGN_OR_RETURN(const size_t passes, host_.Passes());
  passes_ = uint32_t(passes);

  ctx_ = ctx;
  RETURN_IF_ERROR(Enable());
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, ds);
  ds.pRangeProfilerObject = profiler_;
  ds.pMetricNames = names_.data();
  ds.numMetrics = names_.size();
  ds.maxNumOfRanges = 1;
  ds.maxNumRangeTreeNodes = 1;
  RETURN_IF_ERROR(
      Cupti("cuptiRangeProfilerGetCounterDataSize", cuptiRangeProfilerGetCounterDataSize(&ds)));
  counter_data_.assign(ds.counterDataSize, 0);
  return OkStatus();
}

Status KernelProfiler::Enable() {
  if (profiler_) {
    TS_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params, p);
    p.pRangeProfilerObject = profiler_;
    cuptiRangeProfilerDisable(&p);
    profiler_ = nullptr;
  }
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params, ep);
  ep.ctx = ctx_;
  RETURN_IF_ERROR(Cupti("cuptiRangeProfilerEnable", cuptiRangeProfilerEnable(&ep)));
  profiler_ = ep.pRangeProfilerObject;
  return OkStatus();
}

Status KernelProfiler::Configure() {
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ip);
  ip.pRangeProfilerObject = profiler_;
  ip.counterDataSize = counter_data_.size();
  ip.pCounterData = counter_data_.data();
  RETURN_IF_ERROR(Cupti("cuptiRangeProfilerCounterDataImageInitialize",
                        cuptiRangeProfilerCounterDataImageInitialize(&ip)));
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params, sc);
  sc.pRangeProfilerObject = profiler_;
  sc.configSize = host_.config().size();
  sc.pConfig = host_.config().data();
  sc.counterDataImageSize = counter_data_.size();
  sc.pCounterDataImage = counter_data_.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = 1;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  return Cupti("cuptiRangeProfilerSetConfig", cuptiRangeProfilerSetConfig(&sc));
}

Status KernelProfiler::Measure(const std::function<Status()>& launch, CUstream stream,
                               KernelProfile* out) {
  if (!profiler_) return FailedPrecondition("the range profiler is not set up");
  // Each launch on a fresh range profiler (as the one measured on the H200);
  // the config and the counter data image are the set's.
  if (measurements_++ > 0) RETURN_IF_ERROR(Enable());
  RETURN_IF_ERROR(Configure());
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params, st);
  st.pRangeProfilerObject = profiler_;
  RETURN_IF_ERROR(Cupti("cuptiRangeProfilerStart", cuptiRangeProfilerStart(&st)));
  Status launched = launch();
  if (launched.ok() && cuStreamSynchronize(stream) != CUDA_SUCCESS)
    launched = GpuError("cuStreamSynchronize failed after the profiled launch");
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params, sp);
  sp.pRangeProfilerObject = profiler_;
  const CUptiResult stopped = cuptiRangeProfilerStop(&sp);
  RETURN_IF_ERROR(launched);
  RETURN_IF_ERROR(Cupti("cuptiRangeProfilerStop", stopped));
  if (!sp.isAllPassSubmitted)
    return GpuError("the range profiler did not submit every pass of the metric set (" +
                    std::to_string(passes_) + " passes) in one kernel replay");
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
  dd.pRangeProfilerObject = profiler_;
  RETURN_IF_ERROR(Cupti("cuptiRangeProfilerDecodeData", cuptiRangeProfilerDecodeData(&dd)));
  TS_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, gi);
  gi.pCounterDataImage = counter_data_.data();
  gi.counterDataImageSize = counter_data_.size();
  RETURN_IF_ERROR(
      Cupti("cuptiRangeProfilerGetCounterDataInfo", cuptiRangeProfilerGetCounterDataInfo(&gi)));
  if (gi.numTotalRanges < 1) return GpuError("the range profiler measured no range for the launch");
  std::vector<double> values(names_.size(), NAN);
  TS_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
  ev.pHostObject = host_.object();
  ev.pCounterDataImage = counter_data_.data();
  ev.counterDataImageSize = counter_data_.size();
  ev.rangeIndex = 0;
  ev.ppMetricNames = names_.data();
  ev.numMetrics = names_.size();
  ev.pMetricValues = values.data();
  RETURN_IF_ERROR(
      Cupti("cuptiProfilerHostEvaluateToGpuValues", cuptiProfilerHostEvaluateToGpuValues(&ev)));
  out->values.clear();
  for (size_t i = 0; i < kept_.size(); ++i) out->values.push_back({kept_[i], values[i]});
  out->dropped = dropped_;
  out->passes = passes_;
  out->measured = true;
  DeriveKernelProfile(out);
  return OkStatus();
}

}  // namespace tracesmith::replay::gpu
