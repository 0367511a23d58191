// The driver calls the memory profiler needs (memory_calls.h): which calls
// get a stack only and which make rows, and each row call's parameters ->
// MemoryEvent, out-pointers read as at the call's exit.
#include "capture/memory_calls.h"

#include <gtest/gtest.h>

namespace tracesmith::capture {
namespace {

TEST(MemoryCalls, AllocationCallsGetStacksVmmAndIpcCallsMakeRows) {
  for (CUpti_CallbackId cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz})
    EXPECT_EQ(ClassifyMemoryCallback(cbid), MemoryCallback::kStackOnly) << cbid;
  for (CUpti_CallbackId cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
        CUPTI_DRIVER_TRACE_CBID_cuMemMap, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
        CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
        CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle, CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2,
        CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle})
    EXPECT_EQ(ClassifyMemoryCallback(cbid), MemoryCallback::kRow) << cbid;
  for (CUpti_CallbackId cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess,
        CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize})
    EXPECT_EQ(ClassifyMemoryCallback(cbid), MemoryCallback::kNone) << cbid;
  // Stack-only calls make no row of their own (MEMORY2 does).
  cuMemAlloc_v2_params p{nullptr, 64};
  model::MemoryEvent e;
  uint32_t device = 7;
  EXPECT_FALSE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &p, &e, &device));
}

TEST(MemoryCalls, CreateIsTheHandleAndItsSizeOnThePropsDevice) {
  CUmemGenericAllocationHandle handle = 0xabc0001;  // written by the driver before the exit
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 3;
  cuMemCreate_params p{&handle, size_t(6) << 21, &prop, 0};
  model::MemoryEvent e;
  uint32_t device = UINT32_MAX;
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmCreate);
  EXPECT_EQ(e.address, 0xabc0001u);
  EXPECT_EQ(e.bytes, uint64_t(6) << 21);
  EXPECT_EQ(e.memory_kind, 3);  // device
  EXPECT_EQ(e.is_async, 0);
  EXPECT_EQ(device, 3u);
  // A host location names no device: the caller keeps the context's.
  prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
  device = UINT32_MAX;
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, &e, &device));
  EXPECT_EQ(device, UINT32_MAX);
  // No prop (the call fails, but the decoder must not read through null).
  p.prop = nullptr;
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, &e, &device));
  EXPECT_EQ(device, UINT32_MAX);
  p.handle = nullptr;
  EXPECT_FALSE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &p, &e, &device));
}

TEST(MemoryCalls, ReleaseMapUnmapReserveFree) {
  model::MemoryEvent e;
  uint32_t device = UINT32_MAX;
  cuMemRelease_params rel{0xabc0001};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &rel, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmRelease);
  EXPECT_EQ(e.address, 0xabc0001u);
  EXPECT_EQ(e.bytes, 0u);

  cuMemMap_params map{CUdeviceptr(0x7f0000200000), size_t(2) << 21, 0, 0xabc0001, 0};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &map, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmMap);
  EXPECT_EQ(e.address, 0x7f0000200000u);
  EXPECT_EQ(e.bytes, uint64_t(2) << 21);

  cuMemUnmap_params unmap{CUdeviceptr(0x7f0000200000), size_t(2) << 21};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &unmap, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmUnmap);
  EXPECT_EQ(e.address, 0x7f0000200000u);
  EXPECT_EQ(e.bytes, uint64_t(2) << 21);

  CUdeviceptr reserved = 0x7f0000000000;  // the out-pointer, as at the exit
  cuMemAddressReserve_params res{&reserved, size_t(8) << 21, 0, 0, 0};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, &res, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmReserve);
  EXPECT_EQ(e.address, 0x7f0000000000u);
  EXPECT_EQ(e.bytes, uint64_t(8) << 21);
  res.ptr = nullptr;
  EXPECT_FALSE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve, &res, &e, &device));

  cuMemAddressFree_params fr{CUdeviceptr(0x7f0000000000), size_t(8) << 21};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree, &fr, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryVmmUnreserve);
  EXPECT_EQ(e.address, 0x7f0000000000u);
  EXPECT_EQ(e.bytes, uint64_t(8) << 21);
  EXPECT_EQ(device, UINT32_MAX) << "only cuMemCreate names a device";
  EXPECT_EQ(e.memory_kind, 3);
}

TEST(MemoryCalls, IpcOpenAndClose) {
  model::MemoryEvent e;
  uint32_t device = UINT32_MAX;
  CUdeviceptr opened = 0x7f1000000000;
  for (CUpti_CallbackId cbid : {CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle,
                                CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2}) {
    cuIpcOpenMemHandle_v2_params p{&opened, CUipcMemHandle{}, 1};
    ASSERT_TRUE(DecodeMemoryCall(cbid, &p, &e, &device));
    EXPECT_EQ(e.op, model::kMemoryIpcOpen);
    EXPECT_EQ(e.address, 0x7f1000000000u);
    EXPECT_EQ(e.bytes, 0u);
    EXPECT_EQ(e.memory_kind, 3);
  }
  cuIpcCloseMemHandle_params c{CUdeviceptr(0x7f1000000000)};
  ASSERT_TRUE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle, &c, &e, &device));
  EXPECT_EQ(e.op, model::kMemoryIpcClose);
  EXPECT_EQ(e.address, 0x7f1000000000u);
  EXPECT_FALSE(DecodeMemoryCall(CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle, nullptr, &e, &device));
}

}  // namespace
}  // namespace tracesmith::capture
