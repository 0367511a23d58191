// Hardware counters of one replayed launch (`replay --metrics`): CUPTI's
// range profiler on the replay's context, one range per kernel (auto range)
// and CUPTI's kernel replay (it runs the kernel as many passes as the set
// needs, saving and restoring the memory the kernel writes between them),
// values evaluated by the host API under Nsight Compute's metric names.
// Internal to the replay GPU library.
#pragma once

#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/cuda/profiler_host.h"
#include "tracesmith/replay/kernel_profile.h"

namespace tracesmith::replay::gpu {

// What a GPU that cannot do it lacks (ProfilingCallError's words).
inline constexpr char kRangeProfilerUnsupported[] =
    "the GPU, its driver or its configuration does not support CUPTI's range profiler (e.g. a "
    "GPU older than Volta, a vGPU without profiling, confidential computing)";

class KernelProfiler {
 public:
  KernelProfiler() = default;
  ~KernelProfiler();
  KernelProfiler(const KernelProfiler&) = delete;
  KernelProfiler& operator=(const KernelProfiler&) = delete;

  // Set-up on `ctx` of device `device`: the names the chip's profiler
  // accepts (the others in dropped()), their config image and passes, the
  // range profiler enabled on the context. An error says why in words a
  // user can act on (counters closed to the user, another profiler).
  Status Open(CUcontext ctx, int device, const std::vector<std::string>& names);
  // `launch` queues the one kernel on `stream`; its counters into `out`.
  Status Measure(const std::function<Status()>& launch, CUstream stream, KernelProfile* out);

  const std::vector<std::string>& dropped() const { return dropped_; }

 private:
  Status Enable();     // a range profiler object on ctx_ (the last one disabled)
  Status Configure();  // the counter data image emptied and the config set

  cuda::ProfilerHost host_{kRangeProfilerUnsupported};
  std::vector<uint8_t> counter_data_;
  std::vector<std::string> kept_, dropped_;
  std::vector<const char*> names_;  // kept_'s, for CUPTI
  CUpti_RangeProfiler_Object* profiler_ = nullptr;
  uint32_t passes_ = 0;
  CUcontext ctx_ = nullptr;
  uint32_t measurements_ = 0;
};

}  // namespace tracesmith::replay::gpu
