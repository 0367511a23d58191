// Human-readable names of events, shared by view, exporters and reports.
#pragma once

#include <string>
#include <string_view>

#include "tracesmith/model/trace.h"

namespace tracesmith::model {

// Kernel: demangled name (mangled if none). API/NVTX/counter: its name.
// Memcpy: "Memcpy HtoD"; memset: "Memset"; sync: "Sync stream_synchronize"; ...
std::string EventName(const Trace& trace, const KernelEvent& e);
std::string EventName(const Trace& trace, const MemcpyEvent& e);
std::string EventName(const Trace& trace, const MemsetEvent& e);
std::string EventName(const Trace& trace, const SyncEvent& e);
std::string EventName(const Trace& trace, const ApiEvent& e);
std::string EventName(const Trace& trace, const NvtxRangeEvent& e);
std::string EventName(const Trace& trace, const NvtxMarkerEvent& e);
std::string EventName(const Trace& trace, const MemoryEvent& e);
std::string EventName(const Trace& trace, const CounterEvent& e);
// The program's own counters, ranges and instants (app.h): their names.
std::string EventName(const Trace& trace, const AppCounterEvent& e);
std::string EventName(const Trace& trace, const AppEvent& e);
// An NVTX payload: its decoded text ("Message size [bytes]=1048576; ...").
std::string EventName(const Trace& trace, const NvtxPayloadEvent& e);
std::string EventName(const Trace& trace, const ModuleLoadEvent& e);
// What an overhead record's kind (CUPTI's CUpti_ActivityOverheadKind value,
// stored as captured) was spent on, as CUPTI documents it: "buffer flush",
// "instrumentation", ...; nullptr for a value CUPTI did not document.
const char* OverheadKindName(uint32_t kind);
// TraceSmith's own overhead kinds (the top bit: no CUPTI value has it).
// kOverheadPcSamplingDrain: a cuptiPCSamplingGetData call on the writer thread
// (--pc-sampling), during which CUPTI held the program's launches (H200,
// docs/pc-sampling.md "Where the cost sits").
inline constexpr uint32_t kOverheadPcSamplingDrain = 0x8000'0001u;
inline constexpr bool IsOwnOverheadKind(uint32_t kind) { return kind & 0x8000'0000u; }
std::string EventName(const Trace& trace, const GraphLaunchEvent& e);
std::string EventName(const Trace& trace, const OverheadEvent& e);
std::string EventName(const Trace& trace, const DropEvent& e);
// "<function> +0x1a0: <stall reason>" (the reason without CUPTI's prefix).
std::string EventName(const Trace& trace, const PcSampleEvent& e);
// "Kernel timeout: <demangled function>".
std::string EventName(const Trace& trace, const KernelTimeoutEvent& e);
// The sample's metric: its GpuMetric row of the same pid ("SM active
// (sm__cycles_active.avg)"), or "GPU metric <id>" without one.
std::string EventName(const Trace& trace, const GpuMetricSample& e);
// The GpuMetric row of (pid, metric_id), or nullptr.
const GpuMetric* FindGpuMetric(const Trace& trace, uint32_t pid, uint32_t metric_id);
// CUPTI's stall reason name without its "smsp__pcsamp_warps_issue_stalled_" prefix.
std::string_view ShortStallName(std::string_view cupti_name);
// Whether samples under this stall reason count once each: CUPTI's
// "..._not_issued" reasons are sub-counts of another reason, and its names
// other than "smsp__pcsamp_warps_issue_stalled_*" are not stall reasons (the
// capture keeps only counted ones; the analysis skips the others in older files).
bool IsCountedStall(std::string_view cupti_name);

// Device and stream of an event, or -1 when the kind has none.
template <typename T>
int64_t EventDevice(const T& e) {
  if constexpr (requires { e.device_id; })
    return e.device_id;
  else
    return -1;
}
template <typename T>
int64_t EventStream(const T& e) {
  if constexpr (requires { e.stream_id; })
    return e.stream_id;
  else
    return -1;
}

}  // namespace tracesmith::model
