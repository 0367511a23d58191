// The capture's answer to NVTX's extension modules (nvtx_extension.cc):
// injection.cc exports it as InitializeInjectionNvtxExtension.
#pragma once

#include <cstddef>
#include <cstdint>

struct nvtxExtModuleInfo_t;

namespace tracesmith::capture {

// NVTX's nvtxPayloadData_t (nvToolsExtPayload.h, payload extension v1), for
// code that includes no NVTX extension header; nvtx_extension.cc checks the
// layout against NVTX's own.
struct NvtxPayloadData {
  uint64_t schema_id;
  size_t size;
  const void* payload;
};

// What nvtxRangePopPayload does (NCCL pops ncclCommInitRank's range with its
// payload: the communicator's size and the caller's rank): the capture's hook
// records the payloads and pops the range. Without a hook (no capture yet)
// the call is a no-op, as NVTX makes it without a tool.
using NvtxPopPayloadHook = void (*)(const void* domain, const void* payload_data, size_t count);
void SetNvtxPopPayloadHook(NvtxPopPayloadHook hook);

// NVTX's core entry points with event attributes (nvtx[Domain]RangePushEx,
// RangeStartEx, MarkEx), wrapped once CUPTI has filled their slots
// (injection.cc's InitializeInjectionNvtx2 passes NVTX's export-table getter):
// the hook sees the caller's attributes, then CUPTI's function runs (CUPTI's
// own callback may carry a stale copy of them: nvtx_extension.cc). Only a
// tool's functions are wrapped (not the NVTX copy's init stubs). True when a
// slot was wrapped. InsideWrappedNvtxCall(): this thread is inside a wrapped
// call's tool function (CUPTI's NVTX callback then leaves the payloads to the
// hook, which saw them already).
using NvtxPushHook = void (*)(const void* domain, const void* event_attributes);
bool WrapNvtxCore(const void* get_export_table);
void SetNvtxPushHook(NvtxPushHook hook);
bool InsideWrappedNvtxCall();

// Fills the payload module's schema and enum registration slots and
// nvtxRangePopPayload's; other modules' slots stay empty. Returns 1 (NVTX's "success": 0 would make
// every extension call a no-op).
int InitializeNvtxExtension(nvtxExtModuleInfo_t* info);

}  // namespace tracesmith::capture
