// GPU test of the in-process API (tracesmith::capture::Session), driver API
// only: a capture started by the program itself, Write() while running, and
// the "CUPTI already in use" refusal when another CUPTI client came first.
// Without a GPU it prints "skipped (no GPU)".
#include <cuda.h>
#include <cupti.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tracesmith/capture/device_query.h"
#include "tracesmith/capture/session.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::capture {
namespace {

bool HaveGpu() {
  auto info = QueryDevices();
  return info.ok() && !info->devices.empty();
}

void CUPTIAPI Ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

TEST(GpuSession, RefusedWhileCuptiIsTakenThenCapturesCopiesAndMemsets) {
  if (!HaveGpu()) GTEST_SKIP() << "skipped (no GPU)";
  std::string path = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/session_" +
                     std::to_string(getpid()) + ".sbt";
  CaptureOptions options;
  options.output = path;
  options.overwrite = true;
  options.stacks = "none";

  // Another CUPTI client first (what torch.profiler would be): refused, clearly.
  CUpti_SubscriberHandle other = nullptr;
  ASSERT_EQ(cuptiSubscribe(&other, &Ignore, nullptr), CUPTI_SUCCESS);
  {
    Session refused(options);
    Status st = refused.Start();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("already in use"), std::string::npos) << st.ToString();
    std::printf("GPU-CHECK session refused: %s\n", st.message().c_str());
  }
  ASSERT_EQ(cuptiUnsubscribe(other), CUPTI_SUCCESS);

  Session session(options);
  ASSERT_TRUE(session.Start().ok());
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice dev;
  CUcontext ctx;
  ASSERT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 1 << 20), CUDA_SUCCESS);
  for (unsigned v : {1u, 2u, 3u}) ASSERT_EQ(cuMemsetD32(p, v, (1 << 20) / 4), CUDA_SUCCESS);
  std::vector<uint32_t> host((1 << 20) / 4);
  ASSERT_EQ(cuMemcpyDtoH(host.data(), p, 1 << 20), CUDA_SUCCESS);
  EXPECT_EQ(host[12345], 3u);
  ASSERT_TRUE(session.Write().ok());  // rows on disk while still running
  ASSERT_EQ(cuMemcpyDtoH(host.data(), p, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_TRUE(session.Stop().ok());
  cuMemFree(p);
  cuDevicePrimaryCtxRelease(dev);

  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  size_t memsets = t->Rows<model::MemsetEvent>().size();
  size_t copies = t->Rows<model::MemcpyEvent>().size();
  std::printf("GPU-CHECK session: memset=%zu memcpy=%zu (expected 3, 2)\n", memsets, copies);
  EXPECT_EQ(memsets, 3u);
  EXPECT_EQ(copies, 2u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace tracesmith::capture
