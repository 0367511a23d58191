// Recorder: one source of rows that the CUPTI engine drives from callbacks
// (cupti_engine.h). Sync rows, the memory rows and counters, and the replay
// capture are recorders; the next sources (PC sampling, PM sampling) are
// one more each: a file that defines the class and its factory, and a line
// in recorders.cc (README.md: "Adding a recorder").
//
// The engine keeps what every capture has: the CUPTI activity buffers and
// their conversion (ActivityConverter), host stacks (StackCollector,
// CorrelationStacks), the driver API rows of work-submitting calls
// (driver_calls.h), module rows, metadata, clock anchors and drops. A
// recorder sees the engine only through the hooks below.
//
// Hooks, by thread:
//  - at Start (the starting thread): Claim, once, says which callbacks the
//    recorder wants; nothing it did not claim reaches it.
//  - application threads, inside CUPTI callbacks: OnDriverCall,
//    OnContextCreated, OnContextDestroying, OnModuleLoaded, OnGraphNode, OnNvtxPush. The rules of a
//    callback hold here: no lock, allocation or syscall on a path every launch takes (the engine's
//    own hot path stays a table lookup when no recorder claims launches).
//  - the thread that starts (Session) or stops the capture, outside any
//    callback: OnCaptureEdge (may make driver calls).
//  - the writer thread: Collect every poll (5 ms: per-thread rings stay
//    small), then EndProgramStatus, and every flush, in this order: Collect, Write (before the
//    flush's CUPTI records are converted), BeforeActivityBuffers, the
//    records converted, AfterActivityBuffers; at the end WriteStats.
// Each hook is called on the recorders in their order in recorders.cc.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracesmith/capture/capture_cost.h"
#include "tracesmith/capture/capture_options.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/records.h"

struct nvtxEventAttributes_v2;  // nvToolsExt.h's nvtxEventAttributes_t

namespace tracesmith::capture {

class ActivityConverter;

// Appends the capture's stat rows (model::Stat, `tracesmith info`): the
// engine's and the recorders' (Recorder::WriteStats).
class StatSink {
 public:
  StatSink(format::SbtWriter* sbt, uint32_t pid) : sbt_(sbt), pid_(pid) {}
  // A zero value is always kStatInfo, whatever `severity` says.
  void Add(const char* name, uint64_t value, uint8_t severity = model::kStatInfo) {
    model::Stat s;
    s.value = static_cast<int64_t>(value);
    s.name_id = sbt_->InternString(name);
    s.pid = pid_;
    s.severity = value ? severity : static_cast<uint8_t>(model::kStatInfo);
    sbt_->Append(s);
  }

 private:
  format::SbtWriter* sbt_;
  uint32_t pid_;
};

// One driver API callback given to a recorder that claimed it.
struct DriverCallEvent {
  CUpti_CallbackId cbid;
  const CUpti_CallbackData* info;  // info->callbackSite: entry or exit
  uint32_t stack_id;               // the host stack taken at this entry; 0: none (or an exit)
  bool entry;                      // info->callbackSite == CUPTI_API_ENTER
  bool active;                     // activities are on (--capture-range, --delay, --duration)
};

// A CUDA graph node made or cloned (CUPTI's GRAPHNODE_CREATED, GRAPHNODE_CLONED
// resource callbacks), on the thread of the call that made it.
struct GraphNodeEvent {
  CUpti_CallbackId cbid;        // CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED or _CLONED
  const CUpti_GraphData* data;  // node (and originalNode when cloned)
  // The calling thread's host stack (0: stacks off), walked when asked and
  // timed as the engine's stacks are: a recorder asks only for the nodes
  // whose stack it keeps.
  uint32_t TakeStack() const { return take_stack(context); }
  uint32_t (*take_stack)(const void* context);
  const void* context;
};

// An NVTX range pushed or started, or a mark made, with event attributes
// (nvtxDomainRangePushEx, nvtxDomainRangeStartEx, nvtxDomainMarkEx and their
// default-domain forms), on the calling thread.
struct NvtxPushEvent {
  CUpti_CallbackId cbid;
  const void* domain;  // nvtxDomainHandle_t; null: the default domain
  const nvtxEventAttributes_v2* attributes;
};

// How a claimed driver callback reaches its recorder.
struct DriverClaim {
  // Timed (the default): on the engine's callback path, counted and sampled
  // at `site` (capture_cost.h) with the engine's own work on the call (its host
  // stack, driver API row). One site per callback id: the first timed claim's.
  // Untimed: after that path, outside the timing (the replay capture, which
  // synchronizes and copies memory at the launches it records).
  bool timed = true;
  CostSite site = CostSite::kOther;
  // Timed: the engine takes the host stack at the entry (when stacks are
  // on) and records it with the call's correlation id (CorrelationStacks),
  // so GPU and API rows of the call get it; passed as stack_id.
  bool stack = true;
  bool entry = true;  // OnDriverCall at the call's entry
  bool exit = false;  // ... and at its exit
};

// The engine's table of driver callbacks, one 8-byte entry per callback id:
// a launch's callback reads one entry and calls no recorder it does not name.
struct DriverRoute {
  enum Flags : uint8_t {
    kTimed = 1,      // the timed path runs (CostTimer at `site`)
    kStack = 2,      // ... and takes the host stack at entry
    kDriverRow = 4,  // ... and records the call for its driver API row (driver_calls.h)
  };
  uint8_t flags = 0;
  uint8_t site = 0;         // CostSite of the timed path
  uint8_t entry = 0;        // recorders (bit i: the i-th) called on the timed path at entry
  uint8_t exit = 0;         // ... at exit
  uint8_t after_entry = 0;  // recorders called after the timed path (untimed) at entry
  uint8_t after_exit = 0;   // ... at exit
  uint8_t unused[2] = {};
  bool enabled() const { return flags || after_entry || after_exit; }
};
static_assert(sizeof(DriverRoute) == 8, "one load per callback");

// The demangled C++ name, or `name` itself when it is not one (C kernels, Triton's).
std::string Demangle(const char* name);

// A kernel launch's driver callback (cuLaunchKernel, cuLaunchKernelEx,
// cuLaunchCooperativeKernel and their _ptsz forms).
bool IsKernelLaunchCallback(CUpti_CallbackId cbid);

// Recorders at most (their bits in CallbackTable's masks); the first
// kMaxDriverRecorders of them may claim driver callbacks (DriverRoute's
// one-byte masks keep a launch's table entry one 8-byte load).
inline constexpr int kMaxRecorders = 16;
inline constexpr int kMaxDriverRecorders = 8;

// The engine's callback tables, filled by the claims at Start.
struct CallbackTable {
  DriverRoute driver[CUPTI_DRIVER_TRACE_CBID_SIZE];
  uint16_t module_loads = 0;        // recorders given module loads
  uint16_t context_created = 0;     // recorders given context creations
  uint16_t context_destroying = 0;  // recorders given context destructions (before them)
  uint16_t graph_nodes = 0;         // recorders given graph nodes made and cloned
  uint16_t nvtx_pushes = 0;         // recorders given NVTX pushes and marks with attributes
  // The engine's own claim of a work-submitting call (launch, copy, memset,
  // graph launch): timed at `site`, with a stack and/or a driver API row.
  // A callback a recorder claimed timed keeps that claim's site.
  void ClaimWork(CUpti_CallbackId cbid, CostSite site, bool stack, bool driver_row);
};

// What one recorder asks of the engine (Recorder::Claim).
class CallbackClaims {
 public:
  CallbackClaims(CallbackTable* table, int recorder, bool stacks_on)
      : table_(table), recorder_(recorder), bit_(uint16_t(1u << recorder)), stacks_on_(stacks_on) {}
  // Host stacks are on (a collector, or the embedding program's hook).
  bool stacks_on() const { return stacks_on_; }
  // Driver API callback `cbid` (< CUPTI_DRIVER_TRACE_CBID_SIZE), as `how` says.
  // Only the first kMaxDriverRecorders recorders may (the capture stops with
  // a message otherwise: a recorders.cc order to fix, not a user's error).
  void Driver(CUpti_CallbackId cbid, const DriverClaim& how);
  // OnModuleLoaded for every module loaded (enables the module callbacks).
  void ModuleLoads() { table_->module_loads |= bit_; }
  // OnContextCreated for every context created.
  void ContextCreated() { table_->context_created |= bit_; }
  // OnContextDestroying before every context is destroyed.
  void ContextDestroys() { table_->context_destroying |= bit_; }
  // OnGraphNode for every CUDA graph node made or cloned; a node made by a
  // call of the program comes with that call's host stack (when stacks are on).
  void GraphNodes() { table_->graph_nodes |= bit_; }
  // OnNvtxPush for every NVTX push, range start and mark with attributes
  // (enables CUPTI's NVTX callbacks for them; NVTX must reach CUPTI).
  void NvtxPushes() { table_->nvtx_pushes |= bit_; }

 private:
  CallbackTable* table_;
  int recorder_;
  uint16_t bit_;
  bool stacks_on_;
};

class Recorder {
 public:
  virtual ~Recorder() = default;
  // For messages ("sync", "memory", "replay").
  virtual const char* name() const = 0;
  virtual void Claim(CallbackClaims&) {}
  virtual void OnDriverCall(const DriverCallEvent&) {}
  virtual void OnContextCreated(CUcontext) {}
  // The thread destroying the context (cuCtxDestroy, cudaDeviceReset, the
  // runtime's teardown at exit), before it is gone.
  virtual void OnContextDestroying(CUcontext) {}
  virtual void OnModuleLoaded(CUcontext, const CUpti_ModuleResourceData&) {}
  virtual void OnGraphNode(const GraphNodeEvent&) {}
  virtual void OnNvtxPush(const NvtxPushEvent&) {}
  virtual void OnCaptureEdge() {}
  // CUPTI's activity records were switched on or off (the capture range's
  // edges: --capture-range, --delay, --duration; the start and the end), by
  // the thread that switched them, after they were.
  virtual void OnActivities(bool /*on*/) {}
  // Writer thread: moves what the callbacks queued out of their rings.
  virtual void Collect() {}
  // Writer thread, every flush (`final`: the last one): rows that go before
  // the flush's CUPTI records (sync and memory rows).
  virtual void Write(format::SbtWriter&, bool /*final*/) {}
  // ... after the completed buffers are taken, before their records are
  // converted: what the conversion must know (MemoryRecorder's notes of
  // mapping and IPC calls, whose MEMORY2 records it drops).
  virtual void BeforeActivityBuffers(ActivityConverter&) {}
  // ... after the records: rows that go after them (replay payloads, counters).
  virtual void AfterActivityBuffers(format::SbtWriter&, bool /*final*/) {}
  // Writer thread, once, before the capture turns CUPTI's activity records off
  // for good (its end, or --duration's): a recorder that samples the
  // hardware ends its sampling here, while the activities are still on.
  virtual void BeforeCaptureEnd() {}
  // Writer thread, once at the end: the recorder's capture stats.
  virtual void WriteStats(StatSink&) {}
  // Writer thread, after Collect: non-zero when the recorder asks the capture
  // to end the program with this exit status (--on-kernel-timeout exit); the
  // engine then writes what it holds, closes the trace and ends the process.
  virtual int EndProgramStatus() const { return 0; }
};

// What a recorder's factory may look at.
struct RecorderContext {
  uint32_t pid = 0;
  const CaptureOptions* options = nullptr;
  bool subscribed = false;  // a CUPTI callback subscriber exists (no callbacks without it)
  std::string output_path;  // the file this process writes
};

// The recorders capture/ itself holds (each null when the options do not ask
// for it); hardware/ and replay_capture/ declare theirs in their own headers,
// and session/recorders.cc lists them all.
std::unique_ptr<Recorder> MakeSyncRecorder(const RecorderContext& context);
std::unique_ptr<Recorder> MakeMemoryRecorder(const RecorderContext& context);
std::unique_ptr<Recorder> MakeAppEventsRecorder(const RecorderContext& context);
std::unique_ptr<Recorder> MakeGraphNodesRecorder(const RecorderContext& context);
std::unique_ptr<Recorder> MakeNvtxPayloadsRecorder(const RecorderContext& context);

}  // namespace tracesmith::capture
