// The driver calls behind the memory profiler (issue #16): allocation and
// free calls, and the calls CUPTI's MEMORY2 activity has no record for.
//
//  - Allocation and free calls (cuMemAlloc*, cuMemAllocPitch*,
//    cuMemAllocManaged, cuMemAllocHost*, cuMemHostAlloc*, cuMemFree*,
//    cuMemFreeHost, cuMemAllocAsync*, cuMemAllocFromPoolAsync*,
//    cuMemFreeAsync*): CUPTI's MEMORY2 records make their rows; the capture
//    only takes the host stack at their entry, joined to those rows by
//    correlation id (kStackOnly).
//  - Virtual memory management (cuMemCreate/Release, cuMemMap/Unmap,
//    cuMemAddressReserve/Free) and IPC imports (cuIpcOpenMemHandle,
//    cuIpcCloseMemHandle): MEMORY2 reports none of them (seen on the H100,
//    docs/capture.md), so the capture makes their rows itself from the
//    parameters at the call's exit (kRow), model::MemoryOp 3-10.
//
// CUDA/CUPTI headers only, no driver calls: unit-tested on any machine.
#pragma once

#include <cupti.h>

#include <cstdint>

#include "tracesmith/model/records.h"

namespace tracesmith::capture {

enum class MemoryCallback : uint8_t { kNone, kStackOnly, kRow };
MemoryCallback ClassifyMemoryCallback(CUpti_CallbackId cbid);

// Decodes the parameters of a kRow call at its (successful) exit into `out`:
// op, address, bytes and memory_kind (3, device, for every VMM and IPC row).
// `*device` is set when the parameters name the device (cuMemCreate's
// prop->location, a device location), else left alone: the caller takes the
// context's. False for other calls or a null out-pointer.
//   cuMemCreate          address = the CUmemGenericAllocationHandle, bytes = size
//   cuMemRelease         address = the handle, bytes 0
//   cuMemMap / Unmap     address = ptr, bytes = size
//   cuMemAddressReserve  address = the returned ptr, bytes = size
//   cuMemAddressFree     address = ptr, bytes = size
//   cuIpcOpenMemHandle   address = the returned ptr, bytes 0 (the size would
//                        take a driver call inside the callback)
//   cuIpcCloseMemHandle  address = ptr, bytes 0
bool DecodeMemoryCall(CUpti_CallbackId cbid, const void* params, model::MemoryEvent* out,
                      uint32_t* device);

}  // namespace tracesmith::capture
