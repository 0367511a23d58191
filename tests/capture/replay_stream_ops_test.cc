// Decoding of the driver calls replay capture records as stream ops: each
// parameter layout, the per-thread variants, and calls that are not ops.
#include "replay_capture/replay_stream_ops.h"

#include <gtest/gtest.h>

namespace tracesmith::replay_capture {
namespace {

using format::StreamOpKind;

CUstream FakeStream() { return reinterpret_cast<CUstream>(0x5000); }
CUevent FakeEvent() { return reinterpret_cast<CUevent>(0x6000); }

TEST(ReplayStreamOps, HostToDeviceCopyKeepsTheHostPointer) {
  const char host[16] = "abc";
  cuMemcpyHtoDAsync_v2_params p{CUdeviceptr(0x7f0000001000), host, 16, FakeStream()};
  StreamOpCall c;
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &p, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kCopyHtoD);
  EXPECT_EQ(c.dst, 0x7f0000001000u);
  EXPECT_EQ(c.host_src, host);
  EXPECT_EQ(c.bytes, 16u);
  EXPECT_EQ(c.stream, FakeStream());
  EXPECT_FALSE(c.per_thread);
  EXPECT_FALSE(c.generic_copy);
}

TEST(ReplayStreamOps, SyncCopiesRunOnTheDefaultStreamOfTheirVariant) {
  cuMemcpyDtoD_v2_params p{CUdeviceptr(0x2000), CUdeviceptr(0x1000), 64};
  StreamOpCall c;
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, &p, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kCopyDtoD);
  EXPECT_EQ(c.dst, 0x2000u);
  EXPECT_EQ(c.src, 0x1000u);
  EXPECT_EQ(c.stream, nullptr);
  EXPECT_FALSE(c.per_thread);
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds, &p, &c));
  EXPECT_TRUE(c.per_thread);
  cuMemcpyDtoH_v2_params d{nullptr, CUdeviceptr(0x3000), 8};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &d, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kCopyDtoH);
  EXPECT_EQ(c.src, 0x3000u);
  EXPECT_EQ(c.dst, 0u);
}

TEST(ReplayStreamOps, UnifiedCopyIsResolvedLater) {
  cuMemcpyAsync_params p{CUdeviceptr(0x2000), CUdeviceptr(0x1000), 32, FakeStream()};
  StreamOpCall c;
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz, &p, &c));
  EXPECT_TRUE(c.generic_copy);
  EXPECT_TRUE(c.per_thread);
  EXPECT_EQ(c.dst, 0x2000u);
  EXPECT_EQ(c.src, 0x1000u);
  EXPECT_EQ(c.bytes, 32u);
}

TEST(ReplayStreamOps, MemsetsKeepValueAndElementSize) {
  cuMemsetD16Async_params p{CUdeviceptr(0x4000), 0xbeef, 10, FakeStream()};
  StreamOpCall c;
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, &p, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kMemset);
  EXPECT_EQ(c.value, 0xbeefu);
  EXPECT_EQ(c.element_size, 2);
  EXPECT_EQ(c.bytes, 20u);
  cuMemsetD32_v2_params q{CUdeviceptr(0x4000), 0xdeadbeef, 4};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds, &q, &c));
  EXPECT_EQ(c.value, 0xdeadbeefu);
  EXPECT_EQ(c.bytes, 16u);
  EXPECT_TRUE(c.per_thread);
  cuMemsetD8_v2_params r{CUdeviceptr(0x4000), 0x7f, 3};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, &r, &c));
  EXPECT_EQ(c.value, 0x7fu);
  EXPECT_EQ(c.bytes, 3u);
}

TEST(ReplayStreamOps, EventsAndSynchronizations) {
  StreamOpCall c;
  cuEventRecordWithFlags_params rec{FakeEvent(), FakeStream(), 0};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz, &rec, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kEventRecord);
  EXPECT_EQ(c.event, FakeEvent());
  EXPECT_EQ(c.stream, FakeStream());
  EXPECT_TRUE(c.per_thread);
  cuStreamWaitEvent_params wait{FakeStream(), FakeEvent(), 0};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, &wait, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kStreamWaitEvent);
  EXPECT_EQ(c.event, FakeEvent());
  EXPECT_EQ(c.stream, FakeStream());
  cuStreamSynchronize_params ss{FakeStream()};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &ss, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kStreamSync);
  cuEventSynchronize_params es{FakeEvent()};
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &es, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kEventSync);
  ASSERT_TRUE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr, &c));
  EXPECT_EQ(c.kind, StreamOpKind::kContextSync);
}

TEST(ReplayStreamOps, OtherCallsAreNotOps) {
  StreamOpCall c;
  cuMemsetD8_v2_params r{CUdeviceptr(0x4000), 0x7f, 3};
  EXPECT_FALSE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &r, &c));
  EXPECT_FALSE(DecodeStreamOp(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &r, &c));
  EXPECT_FALSE(IsStreamOpCallback(CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2));
  EXPECT_TRUE(IsStreamOpCallback(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds));
  int ops = 0;
  for (uint32_t cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid)
    ops += IsStreamOpCallback(cbid);
  EXPECT_EQ(ops, 38);  // the entry points listed in replay_stream_ops.cc
}

}  // namespace
}  // namespace tracesmith::replay_capture
