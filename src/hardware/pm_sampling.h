// One device's CUPTI PM sampling session (profile --gpu-metrics; the
// recorder is pm_sampling_recorder.cc): the set-up sequence, the decode of
// what the GPU wrote into its buffer, and the end.
//
// Set-up (Open): cuptiProfilerInitialize; cuptiProfilerDeviceSupported
// (api = PM sampling); cuptiDeviceGetChipName; the counter availability
// image (size, then the image); a host object per question asked of the
// chip (a name alone, then the whole set: ChooseGpuMetrics), whose config
// image must need one pass; cuptiPmSamplingEnable; SetConfig (GPU time
// interval, keep-oldest hardware buffer); the counter data image
// (GetCounterDataSize for maxSamples, then Initialize); Start.
// Decode: DecodeData into the counter data image, GetCounterDataInfo for the
// completed samples, each sample's start and end (CounterDataGetSampleInfo)
// and values (cuptiProfilerHostEvaluateToGpuValues), then the image
// initialised again. Close: Stop, a last decode, Disable, HostDeinitialize.
// Not thread-safe: the recorder serialises the calls on one device.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/gpu_metric_set.h"
#include "tracesmith/cuda/profiler_host.h"
#include "tracesmith/hardware/gpu_metrics_list.h"

struct CUpti_PmSampling_Object;

namespace tracesmith::hardware {

// What a GPU that cannot do PM sampling lacks (ProfilingCallError's words).
inline constexpr char kPmSamplingUnsupported[] =
    "PM sampling needs a Turing or later GPU, not a MIG slice, vGPU without profiling, or "
    "confidential computing";

// What the GPU sampled: one sample's interval and a value per kept metric
// (in the order of PmSamplingDevice::choice().kept), already scaled.
struct PmSample {
  uint64_t start_ns = 0, end_ns = 0;
  std::vector<double> values;
};

struct PmDecodeResult {
  std::vector<PmSample> samples;
  bool overflow = false;     // the hardware buffer overflowed: samples were lost
  uint64_t bad_samples = 0;  // samples CUPTI could not give (info or values)
  std::string error;         // a DecodeData failure other than an overflow
  uint64_t raw_ns = 0;       // in cuptiPmSamplingDecodeData (hardware buffer -> image)
  uint64_t evaluate_ns = 0;  // in the samples' evaluation (image -> values)
  uint64_t init_ns = 0;      // emptying the counter data image for the next decode
  uint64_t calls = 0;        // cuptiPmSamplingDecodeData calls
};

struct PmSamplingSettings {
  uint64_t interval_ns = capture::kDefaultGpuMetricsIntervalNs;
  uint64_t hardware_buffer_bytes = 64ull << 20;
  uint32_t max_samples = 4096;  // samples the counter data image holds between two decodes
};

class PmSamplingDevice {
 public:
  explicit PmSamplingDevice(uint32_t device_index) : device_(device_index) {}
  ~PmSamplingDevice();
  PmSamplingDevice(const PmSamplingDevice&) = delete;
  PmSamplingDevice& operator=(const PmSamplingDevice&) = delete;

  // Sets the session up and starts it. An error says why not, in words a
  // user can act on (unsupported GPU, counters restricted to administrators,
  // another profiler holding them, no metric accepted); choice() then still
  // says what was tried.
  Status Open(const capture::GpuMetricsRequest& request, const PmSamplingSettings& settings);
  // Completed samples since the last decode (all of them, in as many decodes
  // as the counter data image needs).
  PmDecodeResult Decode();
  // Stop, a last decode (returned), Disable and the host object's end.
  PmDecodeResult Close();
  // Sampling again after an overflow (CUPTI keeps no samples then): Stop,
  // Disable, then a fresh Enable, config and Start.
  Status Restart();

  uint32_t device() const { return device_; }
  const std::string& chip() const { return host_.chip(); }
  size_t counter_data_bytes() const { return counter_data_.size(); }
  const capture::GpuMetricChoice& choice() const { return choice_; }
  bool running() const { return started_; }
  // Where Close is (any thread may ask, while the session lives): "" before
  // Close, else the CUPTI call it is in or "ended", and the final decode's
  // DecodeData calls so far. Said when the end does not come in time.
  std::string EndProgress() const;

 private:
  Status InitCounterData();
  Status StartOnFreshImage();
  Status Arm();
  PmDecodeResult DecodeOnce(bool* more);

  const uint32_t device_;
  capture::GpuMetricChoice choice_;
  std::vector<const char*> names_;  // choice_.kept's names, for CUPTI
  std::vector<uint8_t> counter_data_;
  cuda::ProfilerHost host_{kPmSamplingUnsupported};
  CUpti_PmSampling_Object* sampler_ = nullptr;
  bool started_ = false;
  PmSamplingSettings settings_;  // Open's, for Arm
  // Close's step: 0 not closing, then kEndSteps' index + 1 (pm_sampling.cc).
  std::atomic<uint32_t> end_step_{0};
  std::atomic<uint32_t> end_decode_calls_{0};
};

// "CUPTI_ERROR_..." words for a CUPTI result, with what to do for the
// results a user can act on (counters restricted, in use by another tool).
std::string PmSamplingError(const char* call, int cupti_result);

}  // namespace tracesmith::hardware
