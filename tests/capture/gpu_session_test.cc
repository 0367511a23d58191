// GPU test of the in-process API (tracesmith::session::Session), driver API
// only: a capture started by the program itself, Write() while running, and
// the "CUPTI already in use" refusal when another CUPTI client came first;
// Stop() naming the native frames of the trace (issue #43: by running this
// build's `tracesmith symbolize --capture-end`), or not.
// Without a GPU it prints "skipped (no GPU)".
#include <cuda.h>
#include <cupti.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "testing/build_paths.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/session/session.h"

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
    session::Session refused(options);
    Status st = refused.Start();
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("already in use"), std::string::npos) << st.ToString();
    std::printf("GPU-CHECK session refused: %s\n", st.message().c_str());
  }
  ASSERT_EQ(cuptiUnsubscribe(other), CUPTI_SUCCESS);

  session::Session session(options);
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
    session::Session again(again_options);
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

// The launching code the stacks must name (kept out of line).
__attribute__((noinline)) void MemsetFromNamedCaller(CUdeviceptr p, unsigned v) {
  ASSERT_EQ(cuMemsetD32(p, v, 1024), CUDA_SUCCESS);
  asm volatile("");  // (no tail call)
}

// One capture with native stacks: the memsets' stacks, as their frames read
// in the written file (function names, "" for an unnamed frame).
std::vector<std::vector<std::string>> CaptureMemsetStacks(const CaptureOptions& options) {
  session::Session session(options);
  EXPECT_TRUE(session.Start().ok());
  EXPECT_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice dev;
  CUcontext ctx;
  EXPECT_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
  for (unsigned v : {1u, 2u}) MemsetFromNamedCaller(p, v);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_TRUE(session.Stop().ok());  // the naming happens here
  cuMemFree(p);
  cuDevicePrimaryCtxRelease(dev);
  std::vector<std::vector<std::string>> stacks;
  auto t = format::ReadTraceFile(options.output);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return stacks;
  for (const model::MemsetEvent& m : t->Rows<model::MemsetEvent>()) {
    std::vector<std::string> frames;
    for (uint32_t id : model::StackFrames(*t, m.stack_id))
      frames.emplace_back(t->strings.Get(t->Rows<model::Frame>()[id - 1].function_id));
    stacks.push_back(frames);
  }
  unlink(options.output.c_str());
  return stacks;
}

TEST(GpuSession, StopNamesNativeFramesUnlessAskedNotTo) {
  if (!HaveGpu()) GTEST_SKIP() << "skipped (no GPU)";
  // The command Stop() runs: this build's (the test binary has no bin/ beside
  // it), found at run time (a carried build tree is elsewhere than where it was built).
  setenv("TRACESMITH_CLI", tracesmith::testing::TracesmithBin(), 0);
  CaptureOptions options;
  options.output = std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/session_names_" +
                   std::to_string(getpid()) + ".sbt";
  options.overwrite = true;
  options.stacks = stacks::StackMode::kNative;
  auto names_caller = [](const std::vector<std::string>& frames) {
    for (const std::string& f : frames)
      if (f.find("MemsetFromNamedCaller") != std::string::npos) return true;
    return false;
  };
  for (bool symbolize : {true, false}) {
    options.symbolize = symbolize;
    auto stacks = CaptureMemsetStacks(options);
    ASSERT_EQ(stacks.size(), 2u);
    for (const auto& frames : stacks) {
      EXPECT_FALSE(frames.empty());
      EXPECT_EQ(names_caller(frames), symbolize);
      std::printf("GPU-CHECK session names (symbolize=%d):", symbolize);
      for (const std::string& f : frames) std::printf(" <- %s", f.empty() ? "?" : f.c_str());
      std::printf("\n");
    }
  }
}

}  // namespace
}  // namespace tracesmith::capture
