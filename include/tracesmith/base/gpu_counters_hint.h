// What to tell a user whose GPU performance counters could not be used: one
// wording for every CUPTI profiling feature (PM sampling, SASS counts, PC
// sampling, replay --metrics). Text only: no CUDA types here.
#pragma once

namespace tracesmith {

// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES and its virtualized twin.
inline constexpr char kCountersRestrictedHint[] =
    "the GPU's performance counters are restricted to administrators: run as root, or load the "
    "driver with NVreg_RestrictProfilingToAdminUsers=0, e.g. `options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0` in /etc/modprobe.d and reboot; "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM";

// Counters in use (CUPTI_ERROR_HARDWARE_BUSY, NOT_COMPATIBLE, INVALID_OPERATION,
// MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, OLD_PROFILER_API_INITIALIZED).
inline constexpr char kCountersBusyHint[] =
    "another profiler may hold the GPU's performance counters: Nsight Systems or Nsight Compute, "
    "DCGM's profiling metrics (dcgm-exporter), or another CUPTI profiling session in this process";

}  // namespace tracesmith
