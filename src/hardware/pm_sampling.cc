// One device's CUPTI PM sampling session (pm_sampling.h). Checked on the
// H200 (docs/capture.md, "GPU hardware metrics over time").
#include "pm_sampling.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "tracesmith/cuda/profiler_host.h"

namespace tracesmith::hardware {
namespace {

constexpr int kMaxDecodesPerCall = 64;  // images filled in one Decode, then the next call goes on

Status Cupti(const char* call, CUptiResult r) {
  return cuda::ProfilingCallStatus(call, r, kPmSamplingUnsupported);
}

Status InitializeProfiler() {
  TS_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params, p);
  return Cupti("cuptiProfilerInitialize", cuptiProfilerInitialize(&p));
}

const char* MetricTypeName(CUpti_MetricType t) {
  switch (t) {
    case CUPTI_METRIC_TYPE_COUNTER:
      return "counter";
    case CUPTI_METRIC_TYPE_RATIO:
      return "ratio";
    case CUPTI_METRIC_TYPE_THROUGHPUT:
      return "throughput";
    default:
      return "?";
  }
}

}  // namespace

std::string PmSamplingError(const char* call, int cupti_result) {
  return cuda::ProfilingCallError(call, static_cast<CUptiResult>(cupti_result),
                                  kPmSamplingUnsupported);
}

PmSamplingDevice::~PmSamplingDevice() {
  if (sampler_) {
    TS_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params, p);
    p.pPmSamplingObject = sampler_;
    cuptiPmSamplingDisable(&p);
  }
  host_.End();
}

Status PmSamplingDevice::Open(const capture::GpuMetricsRequest& request,
                              const PmSamplingSettings& settings) {
  RETURN_IF_ERROR(InitializeProfiler());
  CUdevice cu_device = 0;
  if (cuDeviceGet(&cu_device, int(device_)) != CUDA_SUCCESS)
    return GpuError("cuDeviceGet failed for device " + std::to_string(device_));
  TS_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params, sp);
  sp.cuDevice = cu_device;
  sp.api = CUPTI_PROFILER_PM_SAMPLING;
  RETURN_IF_ERROR(Cupti("cuptiProfilerDeviceSupported", cuptiProfilerDeviceSupported(&sp)));
  if (sp.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    std::string why = "this GPU or its configuration does not support PM sampling";
    if (sp.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += " (it needs a Turing or later GPU)";
    else if (sp.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += " (a vGPU without profiling enabled)";
    else if (sp.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += " (confidential computing is on)";
    else if (sp.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += " (SLI is on)";
    else if (sp.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      why += " (not under this WSL)";
    return GpuError(why);
  }
  RETURN_IF_ERROR(host_.ReadChip(device_));
  TS_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, ap);
  ap.deviceIndex = device_;
  RETURN_IF_ERROR(host_.ReadAvailability("cuptiPmSamplingGetCounterAvailability",
                                         &cuptiPmSamplingGetCounterAvailability, ap));
  constexpr CUpti_ProfilerType kPm = CUPTI_PROFILER_TYPE_PM_SAMPLING;

  // Which names the chip takes, alone and together (one host object each:
  // ConfigAddMetrics only adds).
  Status host_error = OkStatus();
  auto accepts = [&](const std::string& name) {
    if (Status st = host_.Begin(kPm); !st.ok()) {
      host_error = st;
      return false;
    }
    return host_.AddMetrics({name.c_str()}).ok();
  };
  auto one_pass = [&](const std::vector<std::string>& names) {
    std::vector<const char*> c;
    for (const std::string& n : names) c.push_back(n.c_str());
    if (!host_.Begin(kPm).ok() || !host_.AddMetrics(c).ok() || !host_.MakeConfigImage().ok())
      return false;
    StatusOr<size_t> passes = host_.Passes();
    return passes.ok() && *passes == 1;
  };
  choice_ = capture::ChooseGpuMetrics(request, accepts, one_pass);
  if (!host_error.ok()) return host_error;
  if (choice_.empty()) {
    std::string why = "no metric to sample";
    for (const std::string& line : capture::DescribeGpuMetricChoice(choice_)) why += "; " + line;
    return NotFound(why);
  }
  names_.clear();
  for (const capture::ChosenGpuMetric& m : choice_.kept) names_.push_back(m.name.c_str());
  // The host object and config image of the kept set (the last question
  // asked may have been a smaller set).
  RETURN_IF_ERROR(host_.Begin(kPm));
  RETURN_IF_ERROR(host_.AddMetrics(names_));
  RETURN_IF_ERROR(host_.MakeConfigImage());
  ASSIGN_OR_RETURN(const size_t passes, host_.Passes());
  if (passes != 1) return GpuError("the kept metrics need more than one pass");

  settings_ = settings;
  return Arm();
}

// Enable, the config, the counter data image, Start: a fresh sampler.
Status PmSamplingDevice::Arm() {
  TS_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params, ep);
  ep.deviceIndex = device_;
  RETURN_IF_ERROR(Cupti("cuptiPmSamplingEnable", cuptiPmSamplingEnable(&ep)));
  sampler_ = ep.pPmSamplingObject;
  TS_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params, sc);
  sc.pPmSamplingObject = sampler_;
  sc.configSize = host_.config().size();
  sc.pConfig = host_.config().data();
  sc.hardwareBufferSize = settings_.hardware_buffer_bytes;
  sc.samplingInterval = settings_.interval_ns;
  sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // KEEP_OLDEST: a full buffer stops sampling, with overflow set (counted,
  // then restarted). KEEP_LATEST hung the H200's capture (2026-11-29: no
  // decode, the program never ended).
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  RETURN_IF_ERROR(Cupti("cuptiPmSamplingSetConfig", cuptiPmSamplingSetConfig(&sc)));
  TS_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, ds);
  ds.pPmSamplingObject = sampler_;
  ds.pMetricNames = names_.data();
  ds.numMetrics = names_.size();
  ds.maxSamples = settings_.max_samples;
  RETURN_IF_ERROR(
      Cupti("cuptiPmSamplingGetCounterDataSize", cuptiPmSamplingGetCounterDataSize(&ds)));
  counter_data_.assign(ds.counterDataSize, 0);
  return StartOnFreshImage();
}

// The counter data image emptied, then sampling started.
Status PmSamplingDevice::StartOnFreshImage() {
  RETURN_IF_ERROR(InitCounterData());
  TS_CUPTI_PARAMS(CUpti_PmSampling_Start_Params, st);
  st.pPmSamplingObject = sampler_;
  RETURN_IF_ERROR(Cupti("cuptiPmSamplingStart", cuptiPmSamplingStart(&st)));
  started_ = true;
  return OkStatus();
}

Status PmSamplingDevice::InitCounterData() {
  TS_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, p);
  p.pPmSamplingObject = sampler_;
  p.counterDataSize = counter_data_.size();
  p.pCounterData = counter_data_.data();
  return Cupti("cuptiPmSamplingCounterDataImageInitialize",
               cuptiPmSamplingCounterDataImageInitialize(&p));
}

PmDecodeResult PmSamplingDevice::DecodeOnce(bool* more) {
  PmDecodeResult out;
  *more = false;
  TS_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params, dp);
  dp.pPmSamplingObject = sampler_;
  dp.pCounterDataImage = counter_data_.data();
  dp.counterDataImageSize = counter_data_.size();
  const auto t0 = std::chrono::steady_clock::now();
  const CUptiResult r = cuptiPmSamplingDecodeData(&dp);
  const auto t1 = std::chrono::steady_clock::now();
  out.raw_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  out.calls = 1;
  out.overflow = r == CUPTI_ERROR_OUT_OF_MEMORY || dp.overflow;
  if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
    out.error = PmSamplingError("cuptiPmSamplingDecodeData", int(r));
    return out;
  }
  TS_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, ip);
  ip.pCounterDataImage = counter_data_.data();
  ip.counterDataImageSize = counter_data_.size();
  if (CUptiResult e = cuptiPmSamplingGetCounterDataInfo(&ip); e != CUPTI_SUCCESS) {
    out.error = PmSamplingError("cuptiPmSamplingGetCounterDataInfo", int(e));
    return out;
  }
  std::vector<double> values(names_.size());
  for (size_t i = 0; i < ip.numCompletedSamples; ++i) {
    TS_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, si);
    si.pPmSamplingObject = sampler_;
    si.pCounterDataImage = counter_data_.data();
    si.counterDataImageSize = counter_data_.size();
    si.sampleIndex = i;
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
    ev.pHostObject = host_.object();
    ev.pCounterDataImage = counter_data_.data();
    ev.counterDataImageSize = counter_data_.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = names_.data();
    ev.numMetrics = names_.size();
    ev.pMetricValues = values.data();
    if (cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
        cuptiProfilerHostEvaluateToGpuValues(&ev) != CUPTI_SUCCESS) {
      ++out.bad_samples;
      continue;
    }
    PmSample s;
    s.start_ns = si.startTimestamp;
    s.end_ns = std::max(si.endTimestamp, si.startTimestamp);
    s.values.resize(values.size());
    for (size_t m = 0; m < values.size(); ++m) s.values[m] = values[m] * choice_.kept[m].scale;
    out.samples.push_back(std::move(s));
  }
  const auto t2 = std::chrono::steady_clock::now();
  out.evaluate_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count());
  const Status init = InitCounterData();
  out.init_ns = uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t2)
          .count());
  if (!init.ok()) {
    out.error = init.message();
    return out;
  }
  *more = r == CUPTI_SUCCESS &&
          dp.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
  return out;
}

namespace {
// `more`'s samples and counts added to `into`'s (its error, when it has one).
void Merge(PmDecodeResult& into, PmDecodeResult more) {
  into.overflow = into.overflow || more.overflow;
  into.bad_samples += more.bad_samples;
  into.raw_ns += more.raw_ns;
  into.evaluate_ns += more.evaluate_ns;
  into.init_ns += more.init_ns;
  into.calls += more.calls;
  for (PmSample& s : more.samples) into.samples.push_back(std::move(s));
  if (!more.error.empty()) into.error = std::move(more.error);
}
}  // namespace

PmDecodeResult PmSamplingDevice::Decode() {
  PmDecodeResult all;
  if (!sampler_) return all;
  bool more = true;
  for (int i = 0; i < kMaxDecodesPerCall && more; ++i) {
    if (end_step_ != 0) ++end_decode_calls_;
    PmDecodeResult one = DecodeOnce(&more);
    const bool failed = !one.error.empty();
    Merge(all, std::move(one));
    if (failed) break;
  }
  return all;
}

Status PmSamplingDevice::Restart() {
  if (!sampler_) return FailedPrecondition("PM sampling is not enabled");
  TS_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params, sp);
  sp.pPmSamplingObject = sampler_;
  cuptiPmSamplingStop(&sp);
  started_ = false;
  // Start again on the same sampler: CUPTI_ERROR_UNKNOWN on the H200 (CUDA
  // 13.0, 2026-11-29). So: disabled, then enabled and configured afresh.
  TS_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params, dp);
  dp.pPmSamplingObject = sampler_;
  cuptiPmSamplingDisable(&dp);
  sampler_ = nullptr;
  return Arm();
}

namespace {
constexpr const char* kEndSteps[] = {
    "cuptiPmSamplingDecodeData before Stop", "cuptiPmSamplingStop",
    "the last cuptiPmSamplingDecodeData",    "cuptiPmSamplingDisable",
    "cuptiProfilerHostDeinitialize",         "ended"};
}  // namespace

std::string PmSamplingDevice::EndProgress() const {
  const uint32_t step = end_step_.load();
  if (step == 0) return "";
  std::string out = kEndSteps[std::min<size_t>(step, std::size(kEndSteps)) - 1];
  if (step == 1 || step == 3)
    out += " (" + std::to_string(end_decode_calls_.load()) + " calls so far)";
  return out;
}

PmDecodeResult PmSamplingDevice::Close() {
  PmDecodeResult last;
  if (!sampler_) return last;
  // The hardware buffer drained first (NVIDIA's PM sampling samples decode
  // until the end of the records, then stop), then Stop, the rest, Disable.
  end_step_ = 1;
  last = Decode();
  end_step_ = 2;
  if (started_) {
    TS_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params, sp);
    sp.pPmSamplingObject = sampler_;
    cuptiPmSamplingStop(&sp);
    started_ = false;
  }
  end_step_ = 3;
  PmDecodeResult rest = Decode();
  Merge(last, std::move(rest));
  end_step_ = 4;
  TS_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params, dp);
  dp.pPmSamplingObject = sampler_;
  cuptiPmSamplingDisable(&dp);
  sampler_ = nullptr;
  end_step_ = 5;
  host_.End();
  end_step_ = 6;
  return last;
}

StatusOr<std::vector<std::string>> ListPmSamplingMetrics() {
  if (cuInit(0) != CUDA_SUCCESS) return GpuError("cuInit failed: no usable GPU or driver");
  int count = 0;
  if (cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0)
    return GpuError("no CUDA device is visible");
  RETURN_IF_ERROR(InitializeProfiler());
  std::vector<std::string> lines;
  std::set<std::string> chips;
  for (int d = 0; d < count; ++d) {
    cuda::ProfilerHost host(kPmSamplingUnsupported);
    RETURN_IF_ERROR(host.ReadChip(size_t(d)));
    if (!chips.insert(host.chip()).second) continue;
    TS_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params, ap);
    ap.deviceIndex = size_t(d);
    RETURN_IF_ERROR(host.ReadAvailability("cuptiPmSamplingGetCounterAvailability",
                                          &cuptiPmSamplingGetCounterAvailability, ap));
    RETURN_IF_ERROR(host.Begin(CUPTI_PROFILER_TYPE_PM_SAMPLING));
    std::vector<std::string> mine;
    for (CUpti_MetricType type :
         {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
      TS_CUPTI_PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params, bp);
      bp.pHostObject = host.object();
      bp.metricType = type;
      if (cuptiProfilerHostGetBaseMetrics(&bp) != CUPTI_SUCCESS) continue;
      for (size_t i = 0; i < bp.numMetrics; ++i) {
        TS_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params, pp);
        pp.pHostObject = host.object();
        pp.pMetricName = bp.ppMetricNames[i];
        std::string line = std::string(bp.ppMetricNames[i]) + "  " + MetricTypeName(type);
        if (cuptiProfilerHostGetMetricProperties(&pp) == CUPTI_SUCCESS && pp.pDescription)
          line += std::string("  ") + pp.pDescription;
        mine.push_back(std::move(line));
      }
    }
    std::sort(mine.begin(), mine.end());
    lines.push_back("chip " + host.chip() + " (device " + std::to_string(d) +
                    "): " + std::to_string(mine.size()) + " PM sampling base metrics");
    for (std::string& l : mine) lines.push_back("  " + l);
  }
  lines.push_back(
      "Name a metric as listed (with its prefix, e.g. TPC.TriageCompute. on GH100) and a "
      "rollup: counters .sum, .avg, .min or .max (then .per_second or "
      ".pct_of_peak_sustained_elapsed), ratios .pct or .ratio, throughputs "
      ".avg.pct_of_peak_sustained_elapsed; e.g. --gpu-metrics="
      "TPC.TriageCompute.sm__cycles_active.avg,FBSP.TriageCompute.dramc__read_throughput.avg."
      "pct_of_peak_sustained_elapsed");
  return lines;
}

}  // namespace tracesmith::hardware
