// GPU tests: exact expectations on the programs in gpu/programs/, captured
// through `tracesmith profile`. Run by scripts/gpu-check.sh, which sets
//   TS_TRACESMITH  the tracesmith binary      TS_GPU_BIN  compiled gpu/programs
//   TS_GPU_OUT     where traces are written   TS_TORCH_WORKLOAD  torch_mlp_train.py
// Without a GPU (CI) every test is skipped with "skipped (no GPU)".
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "capture/gpu_profile.h"
#include "capture/trace_checks.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::capture {
namespace {

using testing::ApisNamed;
using testing::KernelsNamed;
using testing::RangeNamed;
using testing::Str;

uint64_t Drops(const model::Trace& t) {
  uint64_t n = 0;
  for (const auto& d : t.Rows<model::DropEvent>()) n += d.count;
  return n;
}

TEST(GpuCapture, ExactlyNKernelsWithNameGridBlockAndCopies) {
  REQUIRE_GPU();
  ProfileRun r = Profile("kernel_count", Program("kernel_count") + " 1000");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  ASSERT_TRUE(r.report.indexed) << "file not finalized";
  const auto& t = r.trace;
  auto kernels = KernelsNamed(t, "scale_kernel");
  EXPECT_EQ(kernels.size(), 1000u);
  EXPECT_EQ(t.Rows<model::KernelEvent>().size(), 1000u);
  std::set<uint32_t> corr;
  for (const auto& k : kernels) {
    ASSERT_EQ(k.grid_x * 100 + k.grid_y * 10 + k.grid_z, 731u);
    ASSERT_EQ(k.block_x * 100 + k.block_y * 10 + k.block_z, 6421u);
    corr.insert(k.correlation_id);
  }
  EXPECT_EQ(corr.size(), 1000u);
  auto launches = ApisNamed(t, "cudaLaunchKernel");
  EXPECT_EQ(launches.size(), 1000u);
  for (const auto& a : launches) EXPECT_EQ(corr.count(a.correlation_id), 1u);
  std::map<std::pair<int, uint64_t>, int> copies;
  for (const auto& m : t.Rows<model::MemcpyEvent>()) ++copies[{m.copy_kind, m.bytes}];
  EXPECT_EQ((copies[{model::kCopyHtoD, 1u << 20}]), 1);
  EXPECT_EQ((copies[{model::kCopyDtoH, 1u << 20}]), 1);
  EXPECT_EQ((copies[{model::kCopyDtoD, 1u << 18}]), 1);
  std::multiset<uint32_t> memsets;
  for (const auto& m : t.Rows<model::MemsetEvent>()) memsets.insert(m.value);
  EXPECT_EQ(memsets, (std::multiset<uint32_t>{0, 0x7f}));
  const auto* outer = RangeNamed(t, "outer");
  const auto* inner = RangeNamed(t, "inner");
  ASSERT_TRUE(outer && inner) << "NVTX ranges missing";
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(inner->depth, 1u);
  EXPECT_EQ(t.Rows<model::NvtxMarkerEvent>().size(), 1u);
  EXPECT_GE(t.Rows<model::Device>().size(), 1u);
  EXPECT_EQ(t.Rows<model::Process>().size(), 1u);
  EXPECT_EQ(t.Rows<model::ClockAnchor>().size(), 2u);
  EXPECT_GE(t.Rows<model::ModuleLoadEvent>().size(), 1u);
  for (const auto& m : t.Rows<model::ModuleLoadEvent>())
    if (m.op == model::kModuleLoaded) {
      EXPECT_GT(m.cubin_bytes, 0u);
    }
  EXPECT_EQ(Drops(t), 0u);
  std::printf(
      "GPU-CHECK kernel_count: kernels=%zu launches=%zu memcpy=%zu memset=%zu nvtx=%zu "
      "modules=%zu\n",
      kernels.size(), launches.size(), t.Rows<model::MemcpyEvent>().size(),
      t.Rows<model::MemsetEvent>().size(), t.Rows<model::NvtxRangeEvent>().size(),
      t.Rows<model::ModuleLoadEvent>().size());
}

TEST(GpuCapture, StackHookJoinsApiAndKernelRowsByCorrelation) {
  REQUIRE_GPU();
  ProfileRun r =
      Profile("stack_hook", Program("kernel_count") + " 200", "", "TRACESMITH_TEST_STACK_HOOK=1");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  std::map<uint32_t, uint32_t> api_stack;
  for (const auto& a : ApisNamed(r.trace, "cudaLaunchKernel"))
    api_stack[a.correlation_id] = a.stack_id;
  auto kernels = KernelsNamed(r.trace, "scale_kernel");
  ASSERT_EQ(kernels.size(), 200u);
  int joined = 0;
  for (const auto& k : kernels) {
    EXPECT_NE(k.stack_id, 0u);
    EXPECT_EQ(k.stack_id, api_stack[k.correlation_id]);
    joined += k.stack_id != 0 && k.stack_id == api_stack[k.correlation_id];
  }
  std::printf("GPU-CHECK stack_hook: kernels=200 joined=%d\n", joined);
}

TEST(GpuCapture, TwoStreamsOverlap) {
  REQUIRE_GPU();
  ProfileRun r = Profile("two_streams", Program("two_streams"));
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  auto k = KernelsNamed(r.trace, "spin");
  ASSERT_EQ(k.size(), 2u);
  EXPECT_NE(k[0].stream_id, k[1].stream_id);
  uint64_t overlap_start = std::max(k[0].start_ns, k[1].start_ns);
  uint64_t overlap_end = std::min(k[0].end_ns, k[1].end_ns);
  EXPECT_LT(overlap_start, overlap_end) << "kernels on two streams did not overlap";
  std::printf("GPU-CHECK two_streams: overlap_ns=%lld\n",
              static_cast<long long>(overlap_end) - static_cast<long long>(overlap_start));
}

TEST(GpuCapture, GraphKernelsKeepGraphAndNodeIds) {
  REQUIRE_GPU();
  ProfileRun r = Profile("cuda_graph", Program("cuda_graph") + " 4");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  auto k = KernelsNamed(r.trace, "graph_step");
  ASSERT_EQ(k.size(), 12u);
  std::set<uint64_t> nodes;
  for (const auto& e : k) {
    EXPECT_NE(e.graph_id, 0u);
    nodes.insert(e.graph_node_id);
  }
  EXPECT_EQ(nodes.size(), 3u);
  const auto& launches = r.trace.Rows<model::GraphLaunchEvent>();
  EXPECT_EQ(launches.size(), 4u);
  for (const auto& g : launches) EXPECT_EQ(g.graph_id, k[0].graph_id);
  std::printf("GPU-CHECK cuda_graph: graph_kernels=%zu nodes=%zu graph_launches=%zu\n", k.size(),
              nodes.size(), launches.size());
}

TEST(GpuCapture, MultiThreadedLauncherLosesNothing) {
  REQUIRE_GPU();
  ProfileRun r = Profile("multi_thread", Program("multi_thread") + " 8 2000");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  auto k = KernelsNamed(r.trace, "thread_kernel");
  EXPECT_EQ(k.size(), 16000u);
  std::set<uint32_t> streams, tids;
  for (const auto& e : k) streams.insert(e.stream_id);
  for (const auto& a : ApisNamed(r.trace, "cudaLaunchKernel")) tids.insert(a.tid);
  EXPECT_EQ(streams.size(), 8u);
  EXPECT_EQ(tids.size(), 8u);
  EXPECT_EQ(Drops(r.trace), 0u);
  std::printf("GPU-CHECK multi_thread: kernels=%zu streams=%zu threads=%zu drops=%llu\n", k.size(),
              streams.size(), tids.size(), static_cast<unsigned long long>(Drops(r.trace)));
}

TEST(GpuCapture, CaptureRangeCudaProfilerApi) {
  REQUIRE_GPU();
  ProfileRun r =
      Profile("profiler_range", Program("profiler_range"), "--capture-range=cudaProfilerApi");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  EXPECT_EQ(KernelsNamed(r.trace, "range_kernel").size(), 7u);
  std::printf("GPU-CHECK profiler_range: kernels=%zu (expected 7)\n",
              KernelsNamed(r.trace, "range_kernel").size());
}

struct CrashCase {
  const char* how;
  int exit_code;  // -1: killed by signal
  int signal;
  bool indexed;  // finalized file expected
};

TEST(GpuCapture, AbnormalEndsLeaveReadableTraces) {
  REQUIRE_GPU();
  for (CrashCase c : {CrashCase{"exit", 7, 0, true}, CrashCase{"sigterm", -1, 15, true},
                      CrashCase{"abort", -1, 6, true}, CrashCase{"segv", -1, 11, true},
                      CrashCase{"kill", -1, 9, false}}) {
    ProfileRun r = Profile(std::string("crash_") + c.how, Program("crash") + " " + c.how + " 100");
    // popen's shell turns "tracesmith died of signal n" into exit code 128+n.
    int expected = c.exit_code >= 0 ? c.exit_code : 128 + c.signal;
    EXPECT_EQ(r.exit_code(), expected) << c.how << "\n" << r.output;
    size_t n = KernelsNamed(r.trace, "before_crash").size();
    EXPECT_EQ(n, 100u) << c.how;
    if (c.indexed) {
      EXPECT_TRUE(r.report.indexed) << c.how;
    }
    std::printf("GPU-CHECK crash_%s: rc=%d kernels=%zu indexed=%d\n", c.how, r.exit_code(), n,
                r.report.indexed ? 1 : 0);
  }
}

// torch.profiler's CUDA activity count (kernels + memcpy + memset) for the same
// timed steps equals ours, captured between cudaProfilerStart/Stop.
TEST(GpuCapture, TorchTrainingStepMatchesTorchProfiler) {
  REQUIRE_GPU();
  std::string py = Env("TS_TORCH_WORKLOAD");
  if (py.empty()) GTEST_SKIP() << "skipped (TS_TORCH_WORKLOAD not set)";
  std::string out;
  FILE* p = popen(("python3 " + py + " --steps 10 --profiler torch 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  int st = pclose(p);
  std::smatch m;
  // gpu_activities: torch.profiler's CUDA events minus the CPU annotations it
  // projects onto the GPU timeline (see the workload).
  if (st != 0 || !std::regex_search(out, m, std::regex("gpu_activities=(\\d+)")))
    GTEST_SKIP() << "skipped (torch not usable here): " << out;
  size_t torch_events = std::stoul(m[1]);
  ProfileRun r = Profile("torch_mlp_range", "python3 " + py + " --steps 10 --profiler cuda-range",
                         "--capture-range=cudaProfilerApi");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  size_t ours = r.trace.Rows<model::KernelEvent>().size() +
                r.trace.Rows<model::MemcpyEvent>().size() +
                r.trace.Rows<model::MemsetEvent>().size();
  std::printf(
      "GPU-CHECK torch: torch_profiler_cuda_events=%zu tracesmith_gpu_events=%zu (kernels=%zu "
      "memcpy=%zu memset=%zu)\n",
      torch_events, ours, r.trace.Rows<model::KernelEvent>().size(),
      r.trace.Rows<model::MemcpyEvent>().size(), r.trace.Rows<model::MemsetEvent>().size());
  // The runtime version the program loaded (torch's libcudart.so), as
  // torch.version.cuda names it ("13.0" = 13000).
  std::string torch_cuda;
  if (FILE* v = popen("python3 -c 'import torch; print(torch.version.cuda)' 2>/dev/null", "r")) {
    while (size_t n = fread(buf, 1, sizeof(buf), v)) torch_cuda.append(buf, n);
    pclose(v);
  }
  while (!torch_cuda.empty() && torch_cuda.back() == '\n') torch_cuda.pop_back();
  ASSERT_FALSE(r.trace.Rows<model::Process>().empty());
  const uint32_t runtime = r.trace.Rows<model::Process>().front().runtime_version;
  std::printf("GPU-CHECK torch runtime: process runtime_version=%u torch.version.cuda=%s\n",
              runtime, torch_cuda.c_str());
  EXPECT_EQ(CudaVersionString(int(runtime)), torch_cuda);
  std::map<std::string, int> names;
  for (const auto& k : r.trace.Rows<model::KernelEvent>())
    ++names[std::string(Str(r.trace, k.name_id)).substr(0, 100)];
  for (const auto& [name, count] : names)
    std::printf("tracesmith_kernel_name %d %s\n", count, name.c_str());
  EXPECT_EQ(ours, torch_events);
}

// CUPTI already taken (torch.profiler inside the profiled program): the
// program must still run and keep its exit code.
TEST(GpuCapture, CoexistsWithTorchProfiler) {
  REQUIRE_GPU();
  std::string py = Env("TS_TORCH_WORKLOAD");
  if (py.empty()) GTEST_SKIP() << "skipped (TS_TORCH_WORKLOAD not set)";
  ProfileRun r =
      Profile("torch_with_torch_profiler", "python3 " + py + " --steps 10 --profiler torch");
  EXPECT_EQ(r.exit_code(), 0) << r.output;
  std::printf("GPU-CHECK coexist: rc=%d kernels_in_our_trace=%zu\n", r.exit_code(),
              r.trace.Rows<model::KernelEvent>().size());
}

}  // namespace
}  // namespace tracesmith::capture
