// The host side of CUPTI's profiler, shared by PM sampling (capture/
// pm_sampling.cc: metrics over time), the range profiler (replay/gpu/
// kernel_profiler.cc: replay --metrics) and the SASS counts recorder:
//   - ProfilingCallError: why a CUPTI profiling call failed, in words a user
//     can act on (the counters restricted, the counters busy, or the GPU or
//     its configuration unable to do the feature);
//   - ProfilerHost: one host object (chip, counter availability, metrics, the
//     config image and how many passes it needs). ConfigAddMetrics only adds,
//     so asking whether a set of names is accepted takes a fresh object:
//     Begin again.
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_target.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracesmith/base/gpu_counters_hint.h"
#include "tracesmith/base/status.h"

// A CUPTI parameter struct, zeroed, with its size set.
#define TS_CUPTI_PARAMS(Type, var) \
  Type var{};                      \
  var.structSize = Type##_STRUCT_SIZE

namespace tracesmith::cuda {

// "call: CUPTI_ERROR_X (hint)": the restricted-counters or busy-counters hint
// (base/gpu_counters_hint.h) where one applies, `unsupported` (what the
// feature needs) where the GPU, driver or configuration cannot do it.
inline std::string ProfilingCallError(const char* call, CUptiResult r,
                                      std::string_view unsupported) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::string why = std::string(call) + ": " + (text ? text : "CUPTI error " + std::to_string(r));
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return why + " (" + kCountersRestrictedHint + ")";
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_INVALID_OPERATION:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return why + " (" + kCountersBusyHint + ")";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
      return unsupported.empty() ? why : why + " (" + std::string(unsupported) + ")";
    default:
      return why;
  }
}

// A failed profiling call as a kGpuError Status (ProfilingCallError's words);
// OK on success.
inline Status ProfilingCallStatus(const char* call, CUptiResult r, std::string_view unsupported) {
  if (r == CUPTI_SUCCESS) return OkStatus();
  return GpuError(ProfilingCallError(call, r, unsupported));
}

// One CUPTI profiler host object.
class ProfilerHost {
 public:
  // `unsupported`: ProfilingCallError's words for a GPU that cannot do it.
  explicit ProfilerHost(std::string unsupported) : unsupported_(std::move(unsupported)) {}
  ~ProfilerHost() { End(); }
  ProfilerHost(const ProfilerHost&) = delete;
  ProfilerHost& operator=(const ProfilerHost&) = delete;

  // The chip (named in messages from now on) and its counter availability
  // image, kept for every Begin (a live host object ends first).
  void SetChip(std::string chip) {
    End();
    chip_ = std::move(chip);
  }
  void SetAvailability(std::vector<uint8_t> availability) {
    End();
    availability_ = std::move(availability);
  }
  // The chip of `device` (cuptiDeviceGetChipName), as SetChip.
  Status ReadChip(size_t device) {
    TS_CUPTI_PARAMS(CUpti_Device_GetChipName_Params, p);
    p.deviceIndex = device;
    RETURN_IF_ERROR(Check("cuptiDeviceGetChipName", cuptiDeviceGetChipName(&p)));
    SetChip(p.pChipName ? p.pChipName : "");
    return OkStatus();
  }
  // The counter availability image from `call` (PM sampling's or the range
  // profiler's GetCounterAvailability, `p` naming the device or context),
  // asked twice as CUPTI wants: its size, then the image; as SetAvailability.
  template <typename Params>
  Status ReadAvailability(const char* call_name, CUptiResult (*call)(Params*), Params& p) {
    RETURN_IF_ERROR(Check(call_name, call(&p)));
    std::vector<uint8_t> image(p.counterAvailabilityImageSize, 0);
    p.pCounterAvailabilityImage = image.data();
    RETURN_IF_ERROR(Check(call_name, call(&p)));
    SetAvailability(std::move(image));
    return OkStatus();
  }
  const std::string& chip() const { return chip_; }
  // The object, for the calls this class does not wrap (null before Begin).
  CUpti_Profiler_Host_Object* object() const { return host_; }

  // A fresh host object of `type` (the previous one ended).
  Status Begin(CUpti_ProfilerType type) {
    End();
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params, p);
    p.profilerType = type;
    p.pChipName = chip_.c_str();
    p.pCounterAvailabilityImage = availability_.data();
    RETURN_IF_ERROR(Check("cuptiProfilerHostInitialize", cuptiProfilerHostInitialize(&p)));
    host_ = p.pHostObject;
    return OkStatus();
  }
  void End() {
    if (!host_) return;
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params, p);
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);
    host_ = nullptr;
  }
  Status AddMetrics(const std::vector<const char*>& names) {
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, p);
    p.pHostObject = host_;
    p.ppMetricNames = const_cast<const char**>(names.data());
    p.numMetrics = names.size();
    return Check("cuptiProfilerHostConfigAddMetrics", cuptiProfilerHostConfigAddMetrics(&p));
  }
  // The config image of the metrics added (config()).
  Status MakeConfigImage() {
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, s);
    s.pHostObject = host_;
    RETURN_IF_ERROR(
        Check("cuptiProfilerHostGetConfigImageSize", cuptiProfilerHostGetConfigImageSize(&s)));
    config_.assign(s.configImageSize, 0);
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, p);
    p.pHostObject = host_;
    p.configImageSize = config_.size();
    p.pConfigImage = config_.data();
    return Check("cuptiProfilerHostGetConfigImage", cuptiProfilerHostGetConfigImage(&p));
  }
  const std::vector<uint8_t>& config() const { return config_; }
  // Passes the config image needs.
  StatusOr<size_t> Passes() const {
    TS_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, p);
    p.configImageSize = config_.size();
    p.pConfigImage = const_cast<uint8_t*>(config_.data());
    RETURN_IF_ERROR(Check("cuptiProfilerHostGetNumOfPasses", cuptiProfilerHostGetNumOfPasses(&p)));
    return size_t(p.numOfPasses);
  }
  Status Check(const char* call, CUptiResult r) const {
    return ProfilingCallStatus(call, r, unsupported_);
  }

 private:
  std::string unsupported_, chip_;
  std::vector<uint8_t> availability_, config_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

}  // namespace tracesmith::cuda
