// ActivityConverter: CUPTI activity records -> TraceSmith model rows.
//
// Pure data conversion: it reads CUPTI's record structs (headers only) and
// never calls into CUPTI or the driver, so tests run it on a machine without
// a GPU over raw records captured on a GPU machine (raw_dump.h). Anything
// that lives in the target process (kernel name strings, API names, thread
// names) is reached through NameSource, which a fixture can replace.
//
// Joins done here, all keyed by correlation id (never by position):
//  - EXTERNAL_CORRELATION records -> ApiEvent::external_id;
//  - graph launch API rows -> GraphLaunchEvent, completed with graph id,
//    device and stream from the first GPU record of that launch (which
//    CUPTI usually delivers before the API record);
//  - StackLookup (host stacks taken at API entry) -> stack_id of API and GPU rows.
// NVTX START/END marker records are paired by id into ranges.
#pragma once

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "tracesmith/capture/row_sink.h"
#include "tracesmith/capture/stack_lookup.h"

namespace tracesmith::capture {

// Strings that CUPTI records point to, and other process-local names.
class NameSource {
 public:
  virtual ~NameSource() = default;
  // A string a record points to (kernel name, NVTX message, domain); "" for null.
  virtual std::string_view String(const char* p) = 0;
  // Name of a runtime (domain kApiRuntime) or driver API by callback id.
  virtual std::string_view ApiName(uint8_t domain, uint32_t cbid) = 0;
  // Name of a thread of this process ("" when unknown).
  virtual std::string ThreadName(uint32_t tid) = 0;
};

struct ConverterStats {
  uint64_t records = 0;
  uint64_t unknown_kind = 0;        // records of kinds TraceSmith does not convert
  uint64_t nvtx_unmatched_end = 0;  // END markers without a START
  uint64_t nvtx_unclosed = 0;       // ranges still open at Finish()
  uint64_t vmm_memory_records = 0;  // MEMORY2 records of cuMemMap/Unmap, dropped
  uint64_t ipc_memory_records = 0;  // MEMORY2 records of IPC open/close, dropped
  uint64_t rows_per_kind[64] = {};  // by CUpti_ActivityKind (< 64)
};

class ActivityConverter {
 public:
  ActivityConverter(RowSink* sink, NameSource* names, uint32_t pid);
  ActivityConverter(const ActivityConverter&) = delete;
  ActivityConverter& operator=(const ActivityConverter&) = delete;

  void set_stack_lookup(StackLookup* stacks) { stacks_ = stacks; }

  // Converts one record, as laid out in the CUPTI buffer (its kind says its
  // layout and size).
  void Convert(const CUpti_Activity* record);
  // Emits rows held back for joins (graph launches not yet matched) and
  // counts NVTX ranges never closed. Call once at the end of a capture.
  void Finish();

  const ConverterStats& stats() const { return stats_; }

  // Remembers the correlation ids of runtime API rows over the current and
  // the previous writer cycle (driver_calls.h: a driver call with such an id
  // was made by the runtime).
  void TrackRuntimeCalls(bool on) { track_runtime_ = on; }
  bool IsRuntimeCall(uint32_t correlation_id) const {
    return runtime_calls_[0].count(correlation_id) || runtime_calls_[1].count(correlation_id);
  }
  // Starts a writer cycle: forgets the ids of the cycle before the previous one.
  void NextCycle() {
    cycle_ ^= 1;
    runtime_calls_[cycle_].clear();
  }
  // A cuMemMap or cuMemUnmap call (the capture makes its rows from callbacks,
  // memory_calls.h). CUPTI's MEMORY2 also reports a mapping as an allocation
  // of device memory and an unmapping as a free (seen on the H100, CUPTI
  // 13.0: no context id, and both records of two maps carried the second
  // map's correlation id): those records are dropped, so that mapped memory
  // is not counted as an allocation beside the physical memory
  // (cuMemCreate) it maps. Dropped: a MEMORY2 record with the correlation id
  // of such a call, and, once the program has mapped memory, a device-memory
  // record without a context. Call before converting the buffers that may
  // hold the call's records.
  void NoteMappingCall(uint32_t correlation_id) {
    if (mapping_calls_.size() > (1u << 16)) mapping_calls_.clear();  // bounded; rare calls
    mapping_calls_.insert(correlation_id);
    mapped_ = true;
  }
  // MEMORY2 also reports an IPC import (cuIpcOpenMemHandle/CloseMemHandle) as
  // an allocation and a free of the importing process, with the call's
  // correlation id and context (H100, CUPTI 13.0); the capture makes its own
  // ipc_open/ipc_close rows, and the memory is the exporting process's: those
  // records are dropped (by correlation id only).
  void NoteImportCall(uint32_t correlation_id) {
    if (import_calls_.size() > (1u << 16)) import_calls_.clear();  // bounded; rare calls
    import_calls_.insert(correlation_id);
  }
  // Told of every kernel record converted, with its correlation id and end
  // (the completions --kernel-timeout's watchdog needs: hardware/kernel_watchdog.h).
  void set_kernel_observer(std::function<void(uint32_t correlation_id, uint64_t end_ns)> f) {
    kernel_observer_ = std::move(f);
  }
  // Forget cached string ids (module unloaded: name pointers may be reused).
  void ClearStringCache() { ptr_ids_.clear(); }

 private:
  void ConvertKernel(const CUpti_ActivityKernel10& r);
  void ConvertMemcpy(const CUpti_ActivityMemcpy6& r);
  void ConvertMemcpyPtoP(const CUpti_ActivityMemcpyPtoP4& r);
  void ConvertMemset(const CUpti_ActivityMemset4& r);
  void ConvertSync(const CUpti_ActivitySynchronization2& r);
  void ConvertApi(const CUpti_ActivityAPI& r, uint8_t domain);
  void ConvertMarker(const CUpti_ActivityMarker2& r);
  void ConvertMarkerData(const CUpti_ActivityMarkerData2& r);
  void ConvertMemory(const CUpti_ActivityMemory4& r);
  void ConvertOverhead(const CUpti_ActivityOverhead3& r);
  void ConvertExternal(const CUpti_ActivityExternalCorrelation& r);

  uint32_t StringId(const char* p);
  uint32_t DemangledId(const char* p, uint32_t mangled_id);
  uint32_t StackId(uint32_t correlation_id) {
    return stacks_ && correlation_id ? stacks_->Find(correlation_id) : 0;
  }
  // The ids every GPU-side row takes from its record: correlation, host
  // stack, process, device, context, stream (CUPTI's 0xffffffff, "no
  // stream", becomes 0).
  template <typename Record, typename Row>
  void SetGpuIds(const Record& r, Row* e) {
    e->correlation_id = r.correlationId;
    e->stack_id = StackId(r.correlationId);
    e->pid = pid_;
    e->device_id = r.deviceId;
    e->context_id = r.contextId;
    e->stream_id = r.streamId == 0xffffffffu ? 0 : r.streamId;
  }
  void SeeThread(uint32_t tid);
  uint32_t DeviceOfContext(uint32_t context_id) const;
  // A GPU record with a graph id completes its graph launch row (or is kept
  // until the API record arrives).
  void CompleteGraphLaunch(uint32_t correlation_id, uint32_t graph_id, uint32_t device_id,
                           uint32_t context_id, uint32_t stream_id);

  RowSink* sink_;
  NameSource* names_;
  StackLookup* stacks_ = nullptr;
  uint32_t pid_;
  ConverterStats stats_;
  std::unordered_map<const char*, uint32_t> ptr_ids_;
  std::unordered_map<uint32_t, uint32_t> demangled_ids_;  // mangled id -> demangled id
  std::unordered_map<uint32_t, uint32_t> context_device_;
  std::unordered_set<uint32_t> threads_seen_;
  struct External {
    uint8_t kind;
    uint64_t id;
  };
  std::unordered_map<uint32_t, External> external_;  // correlation id -> external id
  std::unordered_map<uint32_t, model::GraphLaunchEvent> pending_graph_launches_;
  struct GraphWork {
    uint32_t graph_id, device_id, context_id, stream_id;
  };
  std::unordered_map<uint32_t, GraphWork> graph_work_;  // correlation -> first graph record
  struct OpenRange {
    model::NvtxRangeEvent row;
  };
  std::unordered_map<uint32_t, OpenRange> open_ranges_;  // marker id -> open range
  std::unordered_map<uint32_t, uint32_t> range_depth_;   // tid -> open ranges
  std::function<void(uint32_t, uint64_t)> kernel_observer_;
  bool track_runtime_ = false;
  bool mapped_ = false;                         // NoteMappingCall seen
  std::unordered_set<uint32_t> mapping_calls_;  // their correlation ids
  std::unordered_set<uint32_t> import_calls_;   // NoteImportCall
  int cycle_ = 0;
  std::unordered_set<uint32_t> runtime_calls_[2];
  struct MarkerStyle {
    uint32_t color, category;
  };
  std::unordered_map<uint32_t, MarkerStyle> marker_style_;  // marker id -> style
};

// "cudaLaunchKernel" for "cudaLaunchKernel_v7000": CUPTI's callback names
// carry the API version; traces show the name programmers write.
std::string_view StripApiVersion(std::string_view name);

}  // namespace tracesmith::capture
