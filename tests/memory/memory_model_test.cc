// The live-memory model and `tracesmith memory`'s report (issue #16): hand-built
// allocation sequences whose numbers are worked out here, by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/test_traces.h"
#include "memory_test_traces.h"
#include "testing/source_paths.h"
#include "testing/temp_file.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/analysis/steps.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/memory/memory_model.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

TEST(LiveMemoryTest, NestedLifetimesAndFreesWithoutSizes) {
  LiveMemory m;
  // A [10,50) 100 B, B [20,30) 50 B, C [40,60) 30 B; frees carry no size.
  std::vector<std::pair<model::MemoryEvent, uint64_t>> steps = {
      {Ev(10, model::kMemoryAlloc, 0xA, 100), 100}, {Ev(20, model::kMemoryAlloc, 0xB, 50), 150},
      {Ev(30, model::kMemoryFree, 0xB, 0), 100},    {Ev(40, model::kMemoryAlloc, 0xC, 30), 130},
      {Ev(50, model::kMemoryFree, 0xA, 0), 30},     {Ev(60, model::kMemoryFree, 0xC, 0), 0},
  };
  for (const auto& [e, live] : steps) {
    MemoryChange c = m.Apply(e);
    EXPECT_EQ(c.live_bytes, live) << "at " << e.ts_ns;
    EXPECT_EQ(c.kind, e.op == model::kMemoryAlloc ? MemoryChange::kAlloc : MemoryChange::kFree);
  }
  const MemoryTotals& t = m.totals().at(MemoryKey{1, 0, MemorySpace::kDevice});
  EXPECT_EQ(t.allocs, 3u);
  EXPECT_EQ(t.frees, 3u);
  EXPECT_EQ(t.allocated_bytes, 180u);
  EXPECT_EQ(t.live_bytes, 0u);
  EXPECT_EQ(m.live_count(), 0u);
}

TEST(LiveMemoryTest, AFreeEndsItsAllocationWithTheAllocationsSizeAndTime) {
  LiveMemory m;
  m.Apply(Ev(10, model::kMemoryAlloc, 0xA, 4096, 1, 2));
  // The free's device and size are unset: both come from the allocation.
  MemoryChange c = m.Apply(Ev(25, model::kMemoryFree, 0xA, 0, 1, 0));
  EXPECT_EQ(c.kind, MemoryChange::kFree);
  EXPECT_EQ(c.alloc.bytes, 4096u);
  EXPECT_EQ(c.alloc.alloc_ns, 10u);
  EXPECT_EQ(c.key.device_id, 2u);
  EXPECT_EQ(m.totals().at(MemoryKey{1, 2, MemorySpace::kDevice}).live_bytes, 0u);
}

TEST(LiveMemoryTest, FreesOfMemoryFromBeforeTheCaptureChangeNothingAndAreCounted) {
  LiveMemory m;
  m.Apply(Ev(10, model::kMemoryAlloc, 0xA, 100));
  MemoryChange c = m.Apply(Ev(20, model::kMemoryFree, 0xDEAD, 0));
  EXPECT_EQ(c.kind, MemoryChange::kUnmatchedFree);
  EXPECT_EQ(c.live_bytes, 100u);
  EXPECT_EQ(m.totals().at(MemoryKey{1, 0, MemorySpace::kDevice}).unmatched_frees, 1u);
}

TEST(LiveMemoryTest, AnAllocationAtALiveAddressEndsTheEarlierOne) {
  LiveMemory m;
  m.Apply(Ev(10, model::kMemoryAlloc, 0xA, 100));
  MemoryChange c = m.Apply(Ev(20, model::kMemoryAlloc, 0xA, 30));
  EXPECT_EQ(c.replaced.bytes, 100u);
  EXPECT_EQ(c.live_bytes, 30u);
  const MemoryTotals& t = m.totals().at(MemoryKey{1, 0, MemorySpace::kDevice});
  EXPECT_EQ(t.replaced, 1u);
  EXPECT_EQ(t.live_count, 1u);
}

TEST(LiveMemoryTest, TwoProcessesOnOneDeviceAndSpacesAreAccountedApart) {
  LiveMemory m;
  m.Apply(Ev(10, model::kMemoryAlloc, 0xA, 100, /*pid=*/1));
  m.Apply(Ev(11, model::kMemoryAlloc, 0xA, 200, /*pid=*/2));  // same address, another process
  m.Apply(Ev(12, model::kMemoryAlloc, 0xB, 7, 1, 0, model::kMemPinned));
  m.Apply(Ev(13, model::kMemoryAlloc, 0xC, 9, 1, 0, model::kMemManaged));
  MemoryChange c = m.Apply(Ev(20, model::kMemoryFree, 0xA, 0, /*pid=*/1));
  EXPECT_EQ(c.alloc.bytes, 100u);
  EXPECT_EQ(m.totals().at(MemoryKey{1, 0, MemorySpace::kDevice}).live_bytes, 0u);
  EXPECT_EQ(m.totals().at(MemoryKey{2, 0, MemorySpace::kDevice}).live_bytes, 200u);
  EXPECT_EQ(m.totals().at(MemoryKey{1, 0, MemorySpace::kPinnedHost}).live_bytes, 7u);
  EXPECT_EQ(m.totals().at(MemoryKey{1, 0, MemorySpace::kManaged}).live_bytes, 9u);
  EXPECT_EQ(m.live_count(), 3u);
}

TEST(LiveMemoryTest, VmmPhysicalMemoryIsLiveMappingsAndReservationsAreTrackedBeside) {
  LiveMemory m;
  const MemoryKey key{1, 0, MemorySpace::kDevice};
  m.Apply(Ev(10, model::kMemoryVmmReserve, 0x100000, 1024 * kMiB));
  EXPECT_EQ(m.totals().at(key).live_bytes, 0u);
  EXPECT_EQ(m.totals().at(key).reserved_bytes, 1024 * kMiB);
  MemoryChange c = m.Apply(Ev(20, model::kMemoryVmmCreate, /*handle=*/7, 2 * kMiB));
  EXPECT_EQ(c.kind, MemoryChange::kAlloc);
  EXPECT_EQ(c.live_bytes, 2 * kMiB);
  c = m.Apply(Ev(30, model::kMemoryVmmMap, 0x100000, 2 * kMiB));
  EXPECT_EQ(c.kind, MemoryChange::kMap);
  EXPECT_EQ(m.totals().at(key).mapped_bytes, 2 * kMiB);
  EXPECT_EQ(m.totals().at(key).live_bytes, 2 * kMiB);  // mapping adds no memory
  m.Apply(Ev(40, model::kMemoryVmmUnmap, 0x100000, 2 * kMiB));
  EXPECT_EQ(m.totals().at(key).mapped_bytes, 0u);
  c = m.Apply(Ev(50, model::kMemoryVmmRelease, 7, 0));
  EXPECT_EQ(c.kind, MemoryChange::kFree);
  EXPECT_EQ(c.alloc.bytes, 2 * kMiB);
  EXPECT_EQ(m.totals().at(key).live_bytes, 0u);
  m.Apply(Ev(60, model::kMemoryVmmUnreserve, 0x100000, 1024 * kMiB));
  EXPECT_EQ(m.totals().at(key).reserved_bytes, 0u);
  // IPC imports are another process's memory: never live here.
  c = m.Apply(Ev(70, model::kMemoryIpcOpen, 0x900000, 64));
  EXPECT_EQ(c.kind, MemoryChange::kImport);
  EXPECT_EQ(m.totals().at(key).live_bytes, 0u);
  EXPECT_EQ(m.totals().at(key).imported_bytes, 64u);
  EXPECT_EQ(m.totals().at(key).allocs, 1u);  // the cuMemCreate only
}

TEST(MemoryOwnersTest, TheLibraryOfTheInnermostFrameOutsideTheRuntimeOwnsIt) {
  OwnerStacks s;
  const uint32_t torch = s.Stack({s.Native(s.cudart, "cudaMalloc"),
                                  s.Native(s.c10, "c10::cuda::CUDACachingAllocator::malloc"),
                                  s.Native(s.python), s.Python("step", "train.py", 12)});
  const uint32_t nccl = s.Stack({s.Native(s.cudart), s.Native(s.nccl, "ncclCommInitRank")});
  const uint32_t lt = s.Stack({s.Native(s.cublas, "cublasLtCreate"), s.Native(s.prog, "main")});
  // Only the interpreter outside the runtime: the Python frame's file names it.
  const uint32_t py =
      s.Stack({s.Native(s.cudart), s.Native(s.libc), s.Native(s.python),
               s.Python("alloc", "leaky.py", 7), s.Python("<module>", "main.py", 1)});
  const uint32_t prog = s.Stack({s.Native(s.cudart), s.Native(s.prog, "AllocBuffers")});
  const uint32_t runtime_only = s.Stack({s.Native(s.cudart), s.Native(s.libc)});
  MemoryOwners owners(s.b.trace());
  EXPECT_EQ(owners.Name(owners.Of(torch)), "PyTorch caching allocator");
  EXPECT_EQ(owners.Library(owners.Of(torch)), "libc10_cuda.so");
  EXPECT_EQ(owners.Name(owners.Of(nccl)), "NCCL");
  EXPECT_EQ(owners.Name(owners.Of(lt)), "cuBLASLt");
  EXPECT_EQ(owners.Name(owners.Of(py)), "program (leaky.py)");
  EXPECT_EQ(owners.Name(owners.Of(prog)), "program (memory_kinds)");
  EXPECT_EQ(owners.Name(owners.Of(runtime_only)), "(CUDA runtime only)");
  EXPECT_EQ(owners.Name(owners.Of(0u)), "(no stack)");
  Allocation global;
  global.memory_kind = model::kMemDeviceStatic;
  global.stack_id = prog;
  EXPECT_EQ(owners.Name(owners.Of(global)), "module globals");
  // Stable indices: asking again gives the same owner.
  EXPECT_EQ(owners.Of(torch), owners.Of(torch));
}

// A trace for the report: a caching allocator that grows in step 1 and then
// holds, a line that leaks 16 MiB every step, a workspace allocated and freed
// every step (churn), and the capture's cuMemGetInfo counter.
struct ReportTrace {
  OwnerStacks s;
  uint32_t model_line, leak_line, scratch_line, nccl_init;
  ReportTrace() {
    model_line = s.Stack({s.Native(s.cudart), s.Native(s.c10), s.Native(s.python),
                          s.Python("forward", "train.py", 20)});
    leak_line = s.Stack({s.Native(s.cudart), s.Native(s.c10), s.Native(s.python),
                         s.Python("step", "train.py", 31)});
    scratch_line = s.Stack({s.Native(s.cudart), s.Native(s.prog, "Workspace")});
    nccl_init = s.Stack({s.Native(s.cudart), s.Native(s.nccl, "ncclCommInitRank"),
                         s.Native(s.python), s.Python("setup", "train.py", 5)});
    auto& rows = s.b.trace().Rows<model::MemoryEvent>();
    const uint64_t step = 1'000'000'000;  // 1 s per step, 10 steps from t = 1 s
    // NCCL's buffers, from the start to the end.
    rows.push_back(Ev(1 * step + 50, model::kMemoryAlloc, 0x8000000, 64 * kMiB, 1, 0,
                      model::kMemDevice, nccl_init));
    // Step 1: the model's memory, 2 x 20 MiB, held to the end.
    rows.push_back(Ev(1 * step + 100, model::kMemoryAlloc, 0x10000000, 20 * kMiB, 1, 0,
                      model::kMemDevice, model_line));
    rows.push_back(Ev(1 * step + 200, model::kMemoryAlloc, 0x20000000, 20 * kMiB, 1, 0,
                      model::kMemDevice, model_line));
    for (uint64_t i = 1; i <= 10; ++i) {
      rows.push_back(Ev(i * step + 300, model::kMemoryAlloc, 0x40000000 + i * 0x1000000, 16 * kMiB,
                        1, 0, model::kMemDevice, leak_line));
      rows.push_back(Ev(i * step + 400, model::kMemoryAlloc, 0x90000000, 1 * kMiB, 1, 0,
                        model::kMemDevice, scratch_line));
      rows.push_back(Ev(i * step + 500, model::kMemoryFree, 0x90000000, 0, 1, 0, model::kMemDevice,
                        scratch_line));
    }
    model::CounterEvent used{};
    used.ts_ns = 1 * step;
    used.pid = 1;
    used.device_id = 0;
    used.name_id = s.b.Str("device memory used (cuMemGetInfo)");
    used.value = 512.0 * kMiB;
    s.b.trace().Rows<model::CounterEvent>().push_back(used);
    model::Process p{};
    p.pid = 1;
    p.name_id = s.b.Str("python3");
    s.b.trace().Rows<model::Process>().push_back(p);
  }
};

TEST(MemoryReportTest, PeakOwnersLeakChurnAndWhatWasLiveAtAnInstant) {
  ReportTrace rt;
  MemoryReportOptions o;
  o.at = "2.5s";  // relative to the trace start (the counter at 1 s)
  // NVTX ranges of the program: step 10, and its "forward" around the peak.
  rt.s.b.Pid(1);
  rt.s.b.Nvtx("step 10", 10'000'000'000, 10'900'000'000);
  rt.s.b.Nvtx("forward", 10'000'000'350, 10'000'000'450);
  rt.s.b.Nvtx("step 9", 9'000'000'000, 9'900'000'000);
  MemoryReport r = Build(rt.s.b.trace(), o, 1024);
  ASSERT_EQ(r.keys.size(), 1u);
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.peak_nvtx_range, "forward");
  // Peak: 64 MiB NCCL + 40 MiB of model + 10 x 16 MiB leaked + the 1 MiB workspace
  // of step 10.
  EXPECT_EQ(k.peak_bytes, 265 * kMiB);
  EXPECT_EQ(k.at_peak.ts_ns,
            9 * 1'000'000'000ull + 400);  // step 10's +400, from the counter at 1 s
  ASSERT_EQ(k.at_peak.by_owner.size(), 3u);
  EXPECT_EQ(k.at_peak.by_owner[0].owner, "PyTorch caching allocator");
  EXPECT_EQ(k.at_peak.by_owner[0].bytes, 200 * kMiB);
  EXPECT_EQ(k.at_peak.by_owner[1].owner, "NCCL");
  EXPECT_EQ(k.at_peak.by_owner[1].bytes, 64 * kMiB);
  EXPECT_EQ(k.at_peak.by_owner[2].owner, "program (memory_kinds)");
  ASSERT_GE(k.at_peak.by_site.size(), 4u);
  EXPECT_EQ(k.at_peak.by_site[0].site, "step (train.py:31)");
  EXPECT_EQ(k.at_peak.by_site[0].bytes, 160 * kMiB);
  EXPECT_EQ(k.at_peak.by_site[0].count, 10u);
  EXPECT_EQ(k.at_peak.top[0].bytes, 64 * kMiB);
  EXPECT_EQ(k.at_peak.top[1].bytes, 20 * kMiB);
  EXPECT_EQ(k.end_bytes, 264 * kMiB);
  EXPECT_EQ(k.totals.allocs, 23u);
  EXPECT_EQ(k.totals.frees, 10u);
  ASSERT_TRUE(k.used_at_start.has_value());
  EXPECT_EQ(*k.used_at_start, 512 * kMiB);
  // Still live at the end: the leaking line piles up; the model's memory does not.
  ASSERT_EQ(k.live_at_end.size(), 3u);
  EXPECT_EQ(k.live_at_end[0].site, "step (train.py:31)");
  EXPECT_TRUE(k.live_at_end[0].suspect);
  EXPECT_EQ(k.live_at_end[1].site, "setup (train.py:5)");
  EXPECT_FALSE(k.live_at_end[1].suspect);
  EXPECT_EQ(k.live_at_end[2].site, "forward (train.py:20)");
  EXPECT_FALSE(k.live_at_end[2].suspect);
  // Churn: the workspace, 10 allocations and frees of 100 ns each.
  ASSERT_EQ(r.churn.size(), 1u);
  EXPECT_EQ(r.churn[0].site, "Workspace");
  EXPECT_EQ(r.churn[0].frees, 10u);
  EXPECT_EQ(r.churn[0].mean_lifetime_ns, 100u);
  // At 2.5 s after the start (t = 3.5 s): NCCL, the model, steps 1-3 leaked.
  ASSERT_TRUE(k.at.has_value());
  EXPECT_EQ(k.at->live_bytes, 64 * kMiB + 40 * kMiB + 3 * 16 * kMiB);
  EXPECT_EQ(k.at->live_count, 6u);
  // Findings name the leak's line and the memory in use before the capture.
  auto has = [&](const std::string& text) {
    return std::any_of(r.findings.begin(), r.findings.end(),
                       [&](const std::string& f) { return f.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("step (train.py:31) (PyTorch caching allocator) allocated 10 blocks"));
  // Two step ranges are not steps (3 at least), but the range says the phase.
  EXPECT_TRUE(has("at 9.000 s, in a forward pass, inside NVTX range 'forward'"));
  EXPECT_EQ(k.peak_place.evidence, "inside NVTX range 'forward'");
  EXPECT_TRUE(has("512.00 MiB of GPU 0"));
  // NCCL's buffers are held from the start; the caching allocator's are not all.
  EXPECT_TRUE(has("NCCL holds 64.00 MiB on GPU 0 (python3 pid 1), allocated by 50 ns"));
  EXPECT_FALSE(has("PyTorch caching allocator holds"));
  EXPECT_FALSE(has("forward (train.py:20) (PyTorch caching allocator) allocated"));
}

TEST(MemoryReportTest, MemoryAllocatedWhileAGraphWasCapturedIsAGraphPools) {
  ReportTrace rt;
  rt.s.b.Pid(1);
  const uint64_t sec = 1'000'000'000;
  rt.s.b.Api("cudaStreamBeginCapture", 11 * sec, 11 * sec + 10, 900, 0, /*tid=*/7);
  rt.s.b.Api("cudaStreamEndCapture", 11 * sec + 500'000, 11 * sec + 500'100, 901, 0, 7);
  auto& rows = rt.s.b.trace().Rows<model::MemoryEvent>();
  // During the capture: 8 MiB kept, 2 MiB allocated and freed; after it: 4 MiB.
  rows.push_back(Ev(11 * sec + 1000, model::kMemoryAlloc, 0xA0000000, 8 * kMiB, 1, 0,
                    model::kMemDevice, rt.model_line));
  rows.push_back(Ev(11 * sec + 2000, model::kMemoryAlloc, 0xB0000000, 2 * kMiB, 1, 0,
                    model::kMemDevice, rt.model_line));
  rows.push_back(Ev(11 * sec + 3000, model::kMemoryFree, 0xB0000000, 0, 1, 0));
  rows.push_back(Ev(12 * sec, model::kMemoryAlloc, 0xC0000000, 4 * kMiB, 1, 0, model::kMemDevice,
                    rt.model_line));
  MemoryReport r = Build(rt.s.b.trace(), {}, 1024);
  EXPECT_EQ(r.graph_captures, 1u);
  ASSERT_EQ(r.keys.size(), 1u);
  const MemoryKeyReport& k = r.keys[0];
  // 265 MiB at step 10, 264 after its workspace is freed, + 8 + 2 - 2 + 4.
  EXPECT_EQ(k.peak_bytes, 276 * kMiB);
  EXPECT_EQ(k.graph_pool_peak_bytes, 8 * kMiB);
  EXPECT_EQ(k.graph_pool_end_bytes, 8 * kMiB);
  EXPECT_EQ(k.graph_pool_end_count, 1u);
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const std::string& f) {
    return f.find(
               "CUDA graph pools (memory allocated while graphs were captured) hold 8.00 MiB "
               "in 1 blocks") != std::string::npos;
  }));
}

TEST(MemoryReportTest, EventsStoredOutOfTimeOrderAcrossChunksAreAppliedInOrder) {
  ReportTrace rt;
  auto& rows = rt.s.b.trace().Rows<model::MemoryEvent>();
  std::mt19937 rng(7);
  std::shuffle(rows.begin(), rows.end(), rng);
  MemoryReport shuffled = Build(rt.s.b.trace(), {}, /*rows_per_chunk=*/3);
  EXPECT_EQ(shuffled.out_of_order, 0u);
  ASSERT_EQ(shuffled.keys.size(), 1u);
  EXPECT_EQ(shuffled.keys[0].peak_bytes, 265 * kMiB);
  EXPECT_EQ(shuffled.keys[0].totals.unmatched_frees, 0u);
  EXPECT_EQ(shuffled.keys[0].totals.frees, 10u);
}

TEST(MemoryReportTest, ATraceWithoutAllocationsSaysSo) {
  testing::TraceBuilder b;
  b.Kernel("k", 0, 7, 10, 20);
  MemoryReport r = Build(b.trace(), {}, 1024);
  EXPECT_TRUE(r.keys.empty());
  std::ostringstream text;
  WriteMemoryText(r, {}, text);
  EXPECT_NE(text.str().find("No allocations in this trace"), std::string::npos);
}

// Two owners' allocation stacks (the caching allocator through libc10_cuda,
// NCCL) and a kernel at ts 1000 that starts the trace.
struct TwoOwners {
  testing::StackMaker s;
  uint32_t torch_stack = 0, nccl_stack = 0;
  TwoOwners() {
    const uint32_t cudart = s.Module("/usr/lib/libcudart.so.13");
    const uint32_t c10 = s.Module("/torch/lib/libc10_cuda.so");
    const uint32_t nccl = s.Module("/nvidia/nccl/lib/libnccl.so.2");
    torch_stack = s.Stack({s.Native(cudart, "cudaMalloc"), s.Native(c10, "malloc")});
    nccl_stack = s.Stack({s.Native(cudart, "cudaMalloc"), s.Native(nccl, "init")});
    s.b.Kernel("k", 0, 1, 1000, 1001);
  }
};

// Each owner's live bytes per bin (the report's memory chart), the bytes
// carried into a bin counted for it. The trace spans [1000, 1100] (a kernel
// starts it), 4 bins: ts 1000-1025, 1026-1050, 1051-1075, 1076-1100.
TEST(MemoryReportTest, OwnersLiveBytesPerBinIncludeWhatIsCarriedIn) {
  TwoOwners two;
  testing::StackMaker& s = two.s;
  const uint32_t torch_stack = two.torch_stack, nccl_stack = two.nccl_stack;
  auto& rows = s.b.trace().Rows<model::MemoryEvent>();
  const uint8_t dev = model::kMemDevice;
  rows.push_back(Ev(1010, model::kMemoryAlloc, 0x1000, 100, 1, 0, dev, torch_stack));
  rows.push_back(Ev(1020, model::kMemoryAlloc, 0x2000, 50, 1, 0, dev, nccl_stack));
  rows.push_back(Ev(1030, model::kMemoryAlloc, 0x3000, 30, 1, 0, dev, torch_stack));
  rows.push_back(Ev(1040, model::kMemoryFree, 0x3000, 0));
  rows.push_back(Ev(1060, model::kMemoryFree, 0x1000, 0));
  rows.push_back(Ev(1100, model::kMemoryFree, 0x2000, 0));
  MemoryReportOptions o;
  o.bins = 4;
  const MemoryReport r = Build(s.b.trace(), o, 1000);
  ASSERT_EQ(r.start_ns, 1000u);
  ASSERT_EQ(r.duration_ns, 100u);
  ASSERT_EQ(r.keys.size(), 1u);
  const auto& owners = r.keys[0].owners;
  ASSERT_EQ(owners.size(), 2u);
  EXPECT_EQ(owners[0].owner, "PyTorch caching allocator");
  EXPECT_EQ(owners[0].peak_bytes, 130u);
  EXPECT_EQ(owners[0].bins, (std::vector<uint64_t>{100, 130, 100, 0}));
  EXPECT_EQ(owners[1].owner, "NCCL");
  EXPECT_EQ(owners[1].bins, (std::vector<uint64_t>{50, 50, 50, 50}));
}

// The key's series (`memory`'s "over time", the report's thick line) counts
// the bytes carried into a bin as the owners' series do, also when the bin's
// first event is a free (issue #16). Same span and bins as above: A (100 B)
// allocated in bin 0, nothing in bin 1 but A's free at its start, B (40 B) in
// bin 2 and freed at the start of bin 3.
TEST(MemoryReportTest, KeyLiveBytesPerBinIncludeWhatIsCarriedIntoABinThatStartsWithAFree) {
  testing::StackMaker s;
  const uint32_t cudart = s.Module("/usr/lib/libcudart.so.13");
  const uint32_t c10 = s.Module("/torch/lib/libc10_cuda.so");
  const uint32_t torch_stack = s.Stack({s.Native(cudart, "cudaMalloc"), s.Native(c10, "malloc")});
  s.b.Kernel("k", 0, 1, 1000, 1001);
  auto& rows = s.b.trace().Rows<model::MemoryEvent>();
  const uint8_t dev = model::kMemDevice;
  rows.push_back(Ev(1010, model::kMemoryAlloc, 0x1000, 100, 1, 0, dev, torch_stack));
  rows.push_back(Ev(1026, model::kMemoryFree, 0x1000, 0));
  rows.push_back(Ev(1060, model::kMemoryAlloc, 0x2000, 40, 1, 0, dev, torch_stack));
  rows.push_back(Ev(1076, model::kMemoryFree, 0x2000, 0));
  rows.push_back(Ev(1100, model::kMemoryAlloc, 0x3000, 1, 1, 0, dev, torch_stack));
  MemoryReportOptions o;
  o.bins = 4;
  const MemoryReport r = Build(s.b.trace(), o, 1000);
  ASSERT_EQ(r.duration_ns, 100u);
  ASSERT_EQ(r.keys.size(), 1u);
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.bins, (std::vector<uint64_t>{100, 100, 40, 40}));
  ASSERT_EQ(k.owners.size(), 1u);
  EXPECT_EQ(k.owners[0].bins, k.bins);
}

// Bin by bin, the key's series and its owners' agree: a bin's maximum is at
// least each owner's and at most their sum (equal with one owner), on the
// hand-built traces here and on the shipped real captures below.
void ExpectKeyAndOwnersAgree(const MemoryReport& r) {
  for (const MemoryKeyReport& k : r.keys) {
    ASSERT_FALSE(k.owners.empty());
    for (size_t b = 0; b < k.bins.size(); ++b) {
      uint64_t sum = 0, most = 0;
      for (const OwnerPeak& o : k.owners) {
        ASSERT_EQ(o.bins.size(), k.bins.size());
        sum += o.bins[b];
        most = std::max(most, o.bins[b]);
      }
      EXPECT_GE(k.bins[b], most) << k.process << " bin " << b;
      EXPECT_LE(k.bins[b], sum) << k.process << " bin " << b;
      if (k.owners.size() == 1) {
        EXPECT_EQ(k.bins[b], sum) << k.process << " bin " << b;
      }
    }
  }
}

TEST(MemoryReportTest, KeySeriesAgreesWithItsOwnersBinByBin) {
  ReportTrace rt;
  MemoryReportOptions o;
  for (size_t bins : {1, 4, 7, 60, 1000}) {
    o.bins = bins;
    ExpectKeyAndOwnersAgree(Build(rt.s.b.trace(), o, 7));
  }
  // Frees opening bins, two owners: the trace spans [1000, 5999] (a kernel
  // starts it), 50 bins of 100 ns; each allocation is freed at the first
  // nanosecond of the next bin.
  TwoOwners two;
  testing::StackMaker& s = two.s;
  const uint32_t torch_stack = two.torch_stack, nccl_stack = two.nccl_stack;
  auto& rows = s.b.trace().Rows<model::MemoryEvent>();
  for (uint64_t i = 0; i < 49; ++i) {
    rows.push_back(Ev(1000 + i * 100 + 30, model::kMemoryAlloc, 0x1000 + i, 100 - i, 1, 0,
                      model::kMemDevice, i % 3 ? torch_stack : nccl_stack));
    rows.push_back(Ev(1000 + (i + 1) * 100, model::kMemoryFree, 0x1000 + i, 0, 1));
  }
  rows.push_back(Ev(5999, model::kMemoryAlloc, 0x9000, 1, 1, 0, model::kMemDevice, torch_stack));
  o.bins = 50;
  const MemoryReport r = Build(s.b.trace(), o, 5);
  ASSERT_EQ(r.duration_ns, 4999u);
  ASSERT_EQ(r.keys.size(), 1u);
  ASSERT_EQ(r.keys[0].owners.size(), 2u);
  ExpectKeyAndOwnersAgree(r);
  // Bin i+1 holds allocation i (100 - i bytes) until its free, then the
  // smaller allocation i+1.
  for (uint64_t i = 0; i < 49; ++i) EXPECT_EQ(r.keys[0].bins[i + 1], 100 - i) << "bin " << i + 1;
}

// Allocation stacks (issue #16): a trace whose allocations carry no stack says
// so, and why as far as its capture metadata tells; one where only some lack a
// stack says how many. Static memory of loaded modules never has a stack and is
// not counted.
struct StacklessTrace {
  testing::TraceBuilder b{1};
  explicit StacklessTrace(std::initializer_list<std::pair<const char*, const char*>> metadata,
                          std::initializer_list<const char*> stats = {}) {
    for (const auto& [key, value] : metadata)
      b.trace().Rows<model::MetadataEntry>().push_back(
          model::MetadataEntry{.key_id = b.Str(key), .value_id = b.Str(value), .pid = 1});
    for (const char* name : stats)
      b.trace().Rows<model::Stat>().push_back(
          model::Stat{.value = 0, .name_id = b.Str(name), .pid = 1});
    auto& rows = b.trace().Rows<model::MemoryEvent>();
    rows.push_back(Ev(100, model::kMemoryAlloc, 0x1000, 3 * kMiB));
    rows.push_back(Ev(200, model::kMemoryAlloc, 0x2000, 1 * kMiB));
    rows.push_back(Ev(300, model::kMemoryAlloc, 0x3000, 4096, 1, 0, model::kMemDeviceStatic));
  }
};

TEST(MemoryReportTest, ATraceWithoutAllocationStacksSaysWhyOwnersAreNotNamed) {
  auto note_of = [](StacklessTrace t) {
    const MemoryReport r = Build(t.b.trace(), {}, 1024);
    EXPECT_EQ(r.stacks.allocations, 2u);  // the module's static memory left out
    EXPECT_EQ(r.stacks.with_stack, 0u);
    EXPECT_EQ(r.stacks.without_stack_bytes, 4 * kMiB);
    EXPECT_TRUE(r.stacks.none());
    EXPECT_FALSE(r.findings.empty());
    if (!r.findings.empty()) {
      EXPECT_EQ(r.findings[0], r.stacks.note);  // said first
    }
    return r.stacks.note;
  };
  const std::string none =
      note_of(StacklessTrace({{"capture.tool", "tracesmith-inject"}, {"capture.stacks", "none"}},
                             {"capture.stacks_distinct"}));
  EXPECT_EQ(none,
            "This trace has no call stacks on its allocations: it was captured with --stacks none. "
            "Owners and call sites cannot be named; its 2 allocations (4.00 MiB) show as "
            "'(no stack)'.");
  // Stacks on (the capture collected some), but the capture did not record
  // allocation calls (no capture.memory_ring_overflows): an older TraceSmith.
  const std::string old =
      note_of(StacklessTrace({{"capture.tool", "tracesmith-inject"}, {"capture.stacks", "mixed"}},
                             {"capture.stacks_distinct"}));
  EXPECT_NE(old.find("it was captured by a TraceSmith from before allocation calls carried "
                     "stacks (2026-11-24); a new capture names them."),
            std::string::npos)
      << old;
  // Older still: no capture.stacks at all.
  EXPECT_NE(note_of(StacklessTrace({{"capture.tool", "tracesmith-inject"}})).find("from before"),
            std::string::npos);
  // Nothing says why: both causes.
  const std::string unknown = note_of(StacklessTrace({}));
  EXPECT_NE(unknown.find("it was captured with --stacks none or by a TraceSmith from before "
                         "allocation calls carried stacks (2026-11-24), or comes from a format "
                         "without them."),
            std::string::npos)
      << unknown;
  // A new capture with stacks on whose allocations have none: not "older".
  EXPECT_EQ(
      note_of(StacklessTrace({{"capture.tool", "tracesmith-inject"}, {"capture.stacks", "mixed"}},
                             {"capture.stacks_distinct", "capture.memory_ring_overflows"}))
          .find("a new capture names them"),
      std::string::npos);
  // The JSON and the text say it too.
  const MemoryReport r = Build(StacklessTrace({{"capture.stacks", "none"}}).b.trace(), {}, 1024);
  std::ostringstream json, text;
  WriteMemoryJson(r, json);
  const auto j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["allocation_stacks"]["allocations"], 2);
  EXPECT_EQ(j["allocation_stacks"]["with_stack"], 0);
  EXPECT_EQ(j["allocation_stacks"]["without_stack_bytes"], 4 * kMiB);
  EXPECT_EQ(j["allocation_stacks"]["none"], true);
  EXPECT_EQ(j["allocation_stacks"]["note"], r.stacks.note);
  WriteMemoryText(r, {}, text);
  EXPECT_NE(text.str().find("  - This trace has no call stacks on its allocations"),
            std::string::npos)
      << text.str();
}

TEST(MemoryReportTest, AllocationsOfWhichSomeHaveNoStackAreCounted) {
  ReportTrace rt;  // 23 allocations, each with a stack
  MemoryReport all = Build(rt.s.b.trace(), {}, 1024);
  EXPECT_EQ(all.stacks.allocations, 23u);
  EXPECT_EQ(all.stacks.with_stack, 23u);
  EXPECT_EQ(all.stacks.note, "");
  EXPECT_FALSE(all.stacks.none());
  // Two more without a stack, 1 MiB and 2 MiB, one freed: counted all the same.
  auto& rows = rt.s.b.trace().Rows<model::MemoryEvent>();
  rows.push_back(Ev(11'000'000'000, model::kMemoryAlloc, 0xF0000000, 1 * kMiB));
  rows.push_back(Ev(11'000'000'100, model::kMemoryAlloc, 0xF1000000, 2 * kMiB));
  rows.push_back(Ev(11'000'000'200, model::kMemoryFree, 0xF0000000, 0));
  MemoryReport some = Build(rt.s.b.trace(), {}, 1024);
  EXPECT_EQ(some.stacks.allocations, 25u);
  EXPECT_EQ(some.stacks.with_stack, 23u);
  EXPECT_EQ(some.stacks.without_stack_bytes, 3 * kMiB);
  EXPECT_FALSE(some.stacks.none());
  EXPECT_EQ(some.stacks.note,
            "2 of 25 allocations (3.00 MiB) have no call stack, the others have one: owner and "
            "call site show as '(no stack)' for them.");
}

// The shipped transformer capture predates stacks on allocation calls.
TEST(MemoryReportTest, TheShippedTransformerCaptureSaysItsAllocationsHaveNoStacks) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  MemoryReport r;
  ASSERT_TRUE(BuildMemoryReport(
                  std::string(src ? src : ".") + "/examples/traces/transformer_train.sbt", {}, &r)
                  .ok());
  EXPECT_TRUE(r.stacks.none());
  EXPECT_NE(r.stacks.note.find("from before allocation calls carried stacks"), std::string::npos)
      << r.stacks.note;
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0], r.stacks.note);
}

TEST(MemoryReportTest, ABadAtTimeIsAnError) {
  ReportTrace rt;
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(rt.s.b.trace(), path.path()).ok());
  MemoryReportOptions o;
  o.at = "soon";
  MemoryReport r;
  Status st = BuildMemoryReport(path.path(), o, &r);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--at soon"), std::string::npos);
  // Refused before the file is read: a file that does not exist is not the error.
  st = BuildMemoryReport(path.path() + ".missing", o, &r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--at soon: 'soon' is not a duration"), std::string::npos)
      << st.message();
  for (const char* bad : {"-1s", "nan", "inf", "1e30s", "2 s", "3h"}) {
    o.at = bad;
    st = BuildMemoryReport(path.path(), o, &r);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find(std::string("--at ") + bad), std::string::npos) << st.message();
  }
  // Past the end: the trace spans 9 s + 500 ns from the counter at 1 s to step
  // 10's last free; the message gives that range.
  o.at = "9.5s";
  st = BuildMemoryReport(path.path(), o, &r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(),
            "--at 9.5s is past the end of the trace: it spans 0 to 9.000 s (times are relative "
            "to its start)");
  // Its last instant, and its first, are inside it.
  o.at = "9000000500ns";
  ASSERT_TRUE(BuildMemoryReport(path.path(), o, &r).ok());
  ASSERT_TRUE(r.keys[0].at.has_value());
  EXPECT_EQ(r.keys[0].at->live_bytes, 264 * kMiB);
  o.at = "9000000501ns";
  EXPECT_FALSE(BuildMemoryReport(path.path(), o, &r).ok());
  o.at = "0";
  ASSERT_TRUE(BuildMemoryReport(path.path(), o, &r).ok());
  EXPECT_EQ(r.keys[0].at->live_bytes, 0u);  // the counter at 1 s starts the trace
}

}  // namespace
}  // namespace tracesmith::analysis

namespace tracesmith::analysis {
namespace {

std::string ShippedTrace(const std::string& name) {
  return tracesmith::testing::ExampleTracePath(name);
}

// A real capture (a bf16 transformer training step on an H100): the streamed
// report agrees with a plain computation over the whole trace in memory.
TEST(MemoryReportTest, RealTraceAgreesWithAPlainComputation) {
  const std::string path = ShippedTrace("transformer_train.sbt");
  auto t = format::ReadTraceFile(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<model::MemoryEvent> rows = t->Rows<model::MemoryEvent>();
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  // Device memory of the one process: the running sum and its maximum.
  std::map<uint64_t, uint64_t> live;
  uint64_t sum = 0, peak = 0, allocs = 0;
  for (const model::MemoryEvent& e : rows) {
    if (SpaceOf(e.memory_kind) != MemorySpace::kDevice) continue;
    if (e.op == model::kMemoryAlloc) {
      sum += e.bytes, live[e.address] = e.bytes, ++allocs;
    } else if (e.op == model::kMemoryFree && live.count(e.address)) {
      sum -= live[e.address], live.erase(e.address);
    }
    peak = std::max(peak, sum);
  }
  MemoryReport r;
  ASSERT_TRUE(BuildMemoryReport(path, {}, &r).ok());
  ASSERT_FALSE(r.keys.empty());
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.key.space, MemorySpace::kDevice);
  EXPECT_EQ(k.peak_bytes, peak);
  EXPECT_EQ(k.end_bytes, sum);
  EXPECT_EQ(k.totals.allocs, allocs);
  EXPECT_EQ(k.at_peak.live_bytes, peak);
  EXPECT_GT(allocs, 1000u);  // the file is what the test thinks it is
}

// launch_loop.sbt frees its one block 0.18 ms before the end, the first event
// of the last bin: that bin held 4 KiB until then (before issue #16's fix
// the key's series read 0 there, its owner's 4096).
TEST(MemoryReportTest, RealTracesKeySeriesAgreesWithItsOwners) {
  for (const char* name : {"launch_loop.sbt", "transformer_train.sbt", "mlp_train.sbt"}) {
    SCOPED_TRACE(name);
    MemoryReport r;
    ASSERT_TRUE(BuildMemoryReport(ShippedTrace(name), {}, &r).ok());
    ASSERT_FALSE(r.keys.empty());
    ExpectKeyAndOwnersAgree(r);
  }
  MemoryReport r;
  ASSERT_TRUE(BuildMemoryReport(ShippedTrace("launch_loop.sbt"), {}, &r).ok());
  ASSERT_EQ(r.keys[0].totals.frees, 1u);
  EXPECT_EQ(r.keys[0].bins.back(), 4096u);
  EXPECT_EQ(r.keys[0].end_bytes, 0u);
  // The summary says the drop the last bin's maximum hides.
  EXPECT_NE(r.keys[0].summary.find("flat at 4.00 KiB, 0 B at the end"), std::string::npos)
      << r.keys[0].summary;
}

}  // namespace
}  // namespace tracesmith::analysis
