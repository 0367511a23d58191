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
  options.stacks = stacks::StackMode::kNone;

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
  // A second capture started with the context current: device memory in
  // use is read at its start (Session::Start) and at its end.
  CaptureOptions again_options = options;
  again_options.output = path + ".again.sbt";
  {
    Session again(again_options);
    ASSERT_TRUE(again.Start().ok());
    ASSERT_TRUE(again.Stop().ok());
  }
  cuMemFree(p);
  cuDevicePrimaryCtxRelease(dev);

  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  size_t memsets = t->Rows<model::MemsetEvent>().size();
  size_t copies = t->Rows<model::MemcpyEvent>().size();
  std::printf("GPU-CHECK session: memset=%zu memcpy=%zu (expected 3, 2)\n", memsets, copies);
  EXPECT_EQ(memsets, 3u);
  EXPECT_EQ(copies, 2u);
  // Device memory in use: at the context's creation (inside the capture)
  // and at Stop; the second capture: at Start and at Stop.
  auto counters = [](const model::Trace& trace) {
    std::vector<double> v;
    for (const auto& c : trace.Rows<model::CounterEvent>())
      if (trace.strings.Get(c.name_id) == model::kDeviceMemoryUsedCounter) v.push_back(c.value);
    return v;
  };
  auto again = format::ReadTraceFile(again_options.output);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::vector<double> first = counters(*t), second = counters(*again);
  std::printf("GPU-CHECK session device memory used (MiB):");
  for (double v : first) std::printf(" %.1f", v / (1 << 20));
  std::printf(" | second capture:");
  for (double v : second) std::printf(" %.1f", v / (1 << 20));
  std::printf("\n");
  EXPECT_EQ(first.size(), 2u);
  EXPECT_EQ(second.size(), 2u);
  for (double v : second) EXPECT_GT(v, 0.0);
  unlink(again_options.output.c_str());
  unlink(path.c_str());
}

}  // namespace
}  // namespace tracesmith::capture
