// GPU tests for what limits a capture in time: --capture-range=nvtx:<name>,
// --delay and --duration. Without a GPU every test prints "skipped (no GPU)".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "capture/gpu_profile.h"
#include "capture/trace_checks.h"

namespace tracesmith::capture {
namespace {

using testing::KernelsNamed;

TEST(GpuCaptureRange, NvtxRangeRecordsOnlyInsideIt) {
  REQUIRE_GPU();
  // kernel_count: HtoD copy and memsets inside "outer" before "inner"; the
  // 100 kernels inside "inner"; DtoD and DtoH copies after it.
  ProfileRun r =
      Profile("nvtx_range", Program("kernel_count") + " 100", "--capture-range=nvtx:inner");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  size_t kernels = KernelsNamed(r.trace, "scale_kernel").size();
  size_t copies = r.trace.Rows<model::MemcpyEvent>().size();
  size_t memsets = r.trace.Rows<model::MemsetEvent>().size();
  std::printf("GPU-CHECK nvtx_range: kernels=%zu memcpy=%zu memset=%zu (expected 100, 0, 0)\n",
              kernels, copies, memsets);
  EXPECT_EQ(kernels, 100u);
  EXPECT_EQ(copies, 0u);
  EXPECT_EQ(memsets, 0u);
}

struct Phases {
  size_t a, b, c;
};
Phases Count(const model::Trace& t) {
  return {KernelsNamed(t, "phase_a").size(), KernelsNamed(t, "phase_b").size(),
          KernelsNamed(t, "phase_c").size()};
}

TEST(GpuCaptureRange, DelaySkipsTheFirstPhase) {
  REQUIRE_GPU();
  ProfileRun r = Profile("delay", Program("timed_phases"), "--delay 1s");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  Phases p = Count(r.trace);
  std::printf("GPU-CHECK delay 1s: phase_a=%zu phase_b=%zu phase_c=%zu (expected 0, 50, 50)\n", p.a,
              p.b, p.c);
  EXPECT_EQ(p.a, 0u);
  EXPECT_EQ(p.b, 50u);
  EXPECT_EQ(p.c, 50u);
}

TEST(GpuCaptureRange, DurationKeepsOnlyTheFirstPhase) {
  REQUIRE_GPU();
  ProfileRun r = Profile("duration", Program("timed_phases"), "--duration 1s");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  Phases p = Count(r.trace);
  std::printf("GPU-CHECK duration 1s: phase_a=%zu phase_b=%zu phase_c=%zu (expected 50, 0, 0)\n",
              p.a, p.b, p.c);
  EXPECT_EQ(p.a, 50u);
  EXPECT_EQ(p.b, 0u);
  EXPECT_EQ(p.c, 0u);
}

// Every GPU of the machine in one trace: kernels carry their device ids and
// every device gets a Device row. Skipped on a machine with one GPU.
TEST(GpuCaptureDevices, EveryGpuIsRecorded) {
  REQUIRE_GPU();
  auto devices = QueryDevices();
  ASSERT_TRUE(devices.ok());
  size_t n = devices->devices.size();
  if (n < 2) GTEST_SKIP() << "skipped (one GPU)";
  ProfileRun r = Profile("multi_gpu", Program("multi_gpu"));
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  std::map<uint32_t, size_t> per_device;
  for (const auto& k : KernelsNamed(r.trace, "on_device")) ++per_device[k.device_id];
  EXPECT_EQ(r.trace.Rows<model::Device>().size(), n);
  for (size_t d = 0; d < n; ++d) {
    std::printf("GPU-CHECK multi_gpu: device %zu kernels=%zu (expected %zu)\n", d,
                per_device[uint32_t(d)], 10 * (d + 1));
    EXPECT_EQ(per_device[uint32_t(d)], 10 * (d + 1));
  }
}

// A launcher that starts two CUDA processes: each writes its own file, the
// first to claim the name gets it, the other <stem>.pid<PID>.sbt.
TEST(GpuCaptureProcesses, EachProcessWritesItsOwnFile) {
  REQUIRE_GPU();
  std::string prog = Program("kernel_count");
  ProfileRun r = Profile("two_procs", "sh -c '" + prog + " 10 & " + prog + " 20; wait'");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  std::string dir = Env("TS_GPU_OUT", "/tmp");
  std::vector<size_t> counts;
  counts.push_back(KernelsNamed(r.trace, "scale_kernel").size());
  FILE* ls = popen(("ls " + dir + "/two_procs.pid*.sbt 2>/dev/null").c_str(), "r");
  char line[4096];
  while (fgets(line, sizeof(line), ls)) {
    std::string path(line);
    while (!path.empty() && path.back() == '\n') path.pop_back();
    auto t = format::ReadTraceFile(path);
    if (t.ok()) counts.push_back(KernelsNamed(*t, "scale_kernel").size());
    std::remove(path.c_str());
  }
  pclose(ls);
  std::sort(counts.begin(), counts.end());
  std::printf("GPU-CHECK two_procs: files=%zu kernels per file:", counts.size());
  for (size_t c : counts) std::printf(" %zu", c);
  std::printf(" (expected 2 files: 10 20)\n");
  EXPECT_EQ(counts, (std::vector<size_t>{10, 20}));
}

}  // namespace
}  // namespace tracesmith::capture
