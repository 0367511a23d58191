// `tracesmith memory`'s peaks placed in the steps of their process and in their phase
// (memory_steps.h; issue #16): hand-built training loops whose numbers are worked out here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "memory_steps.h"
#include "memory_test_traces.h"
#include "testing/source_paths.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/analysis/steps.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

// Steps (issue #16): a peak is placed in a step of its process, as `analyze`
// finds steps, and in a phase of it when the allocation's stack or the NVTX
// ranges say so.
//
// Five iterations of a training loop (pid 1, device 0): the host launches
// fwd, bwd and opt at H+0, H+300 and H+600 (H = 1000 + 1000 i, calls of 10
// ns); the GPU runs them 500 ns behind the host: fwd [H+500, H+600], bwd
// [H+800, H+900], opt [H+1100, H+1200]. The repeating kernel sequence: fwd
// starts each step (the GPU idles 300 ns before it, 200 before the others),
// so the steps on the GPU are [H+500, next H+500), and on the host, from the
// launch of each step's fwd: [H, H+1000), the last [5000, 5610] (the end of
// opt's launch call).
//
// Allocations, on the host (the trace starts at the first, 500):
//   500        10 MiB weights, before any launch: "before step 1"
//   H+100      2 MiB activation under Linear.forward, freed at H+350
//   H+400      grad on the autograd thread, 4 MiB (8 MiB in iteration 2),
//              freed at H+650
//   1620       1 MiB of optimizer state under torch/optim/adam.py, kept
//   4700       2 MiB cuBLASLt workspace (no Python frames), kept
// Peak: 10 + 1 + 8 = 19 MiB at 3400 (iteration 2's grad), 2.900 us from the
// start; on the host that is step 3, while the GPU is still in step 2
// ([2500, 3500)). cuBLASLt peaks at 2 MiB at 4700 (4.200 us): step 4.
struct TrainingLoop {
  OwnerStacks s;
  uint32_t weights, activation, grad, optimizer, workspace;
  explicit TrainingLoop(bool launch_calls = true) {
    s.b.Pid(1);
    const uint32_t engine = s.Module("/site-packages/torch/lib/libtorch_cpu.so");
    weights =
        s.Stack({s.Native(s.cudart), s.Native(s.c10, "malloc"), s.Native(s.python),
                 s.Python("Module.to",
                          "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1355),
                 s.Python("main", "train.py", 10)});
    activation =
        s.Stack({s.Native(s.cudart), s.Native(s.c10, "malloc"), s.Native(s.python),
                 s.Python("Linear.forward",
                          "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py", 134),
                 s.Python("Module._call_impl",
                          "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1775),
                 s.Python("step", "train.py", 36), s.Python("main", "train.py", 50)});
    grad = s.Stack({s.Native(s.cudart), s.Native(s.c10, "malloc"),
                    s.Native(engine, "torch::autograd::generated::MmBackward0::apply(...)"),
                    s.Native(engine, "torch::autograd::Engine::thread_main(...)")});
    optimizer = s.Stack({s.Native(s.cudart), s.Native(s.c10, "malloc"), s.Native(s.python),
                         s.Python("_multi_tensor_adam",
                                  "/venv/lib/python3.12/site-packages/torch/optim/adam.py", 795),
                         s.Python("step", "train.py", 39), s.Python("main", "train.py", 50)});
    workspace = s.Stack({s.Native(s.cudart), s.Native(s.cublas, "cublasLtMatmul")});
    auto& rows = s.b.trace().Rows<model::MemoryEvent>();
    auto alloc = [&](uint64_t ts, uint64_t address, uint64_t bytes, uint32_t stack) {
      rows.push_back(Ev(ts, model::kMemoryAlloc, address, bytes, 1, 0, model::kMemDevice, stack));
    };
    auto free = [&](uint64_t ts, uint64_t address) {
      rows.push_back(Ev(ts, model::kMemoryFree, address, 0, 1));
    };
    alloc(500, 0x1000000, 10 * kMiB, weights);
    for (uint64_t i = 0; i < 5; ++i) {
      const uint64_t h = 1000 + 1000 * i;
      const char* names[] = {"fwd", "bwd", "opt"};
      const uint64_t launch[] = {0, 300, 600}, run[] = {500, 800, 1100};
      for (int k = 0; k < 3; ++k)
        s.b.Kernel(names[k], 0, 1, h + run[k], h + run[k] + 100, launch_calls ? h + launch[k] : 0,
                   launch_calls ? h + launch[k] + 10 : 0);
      alloc(h + 100, 0x2000000, 2 * kMiB, activation);
      free(h + 350, 0x2000000);
      alloc(h + 400, 0x3000000, (i == 2 ? 8 : 4) * kMiB, grad);
      free(h + 650, 0x3000000);
    }
    alloc(1620, 0x4000000, 1 * kMiB, optimizer);
    alloc(4700, 0x5000000, 2 * kMiB, workspace);
    model::Process p{};
    p.pid = 1;
    p.name_id = s.b.Str("python3");
    s.b.trace().Rows<model::Process>().push_back(p);
  }
};

TEST(MemoryReportTest, APeakIsPlacedInItsStepOnTheHostsClockAndInItsPhase) {
  TrainingLoop loop;
  MemoryReport r = Build(loop.s.b.trace(), {}, 7);
  ASSERT_EQ(r.start_ns, 500u);
  ASSERT_EQ(r.keys.size(), 1u);
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.steps.method, "repeating kernel sequence");
  EXPECT_EQ(k.steps.count, 5u);
  EXPECT_EQ(k.steps.warmup, 0u);
  EXPECT_EQ(k.steps.bounds, "launch calls");
  EXPECT_EQ(k.peak_bytes, 19 * kMiB);
  EXPECT_EQ(k.at_peak.ts_ns, 2900u);
  EXPECT_EQ(k.peak_place.where, StepPlace::kInStep);
  EXPECT_EQ(k.peak_place.step, 3u);
  EXPECT_EQ(k.peak_place.phase, "backward");
  EXPECT_EQ(k.peak_place.evidence, "allocated on the autograd engine's thread");
  EXPECT_EQ(k.peak_place.text, "in step 3's backward");
  ASSERT_EQ(k.owners.size(), 2u);
  EXPECT_EQ(k.owners[0].owner, "PyTorch caching allocator");
  EXPECT_EQ(k.owners[0].peak_place.text, "in step 3's backward");
  EXPECT_EQ(k.owners[1].owner, "cuBLASLt");
  EXPECT_EQ(k.owners[1].peak_ns, 4200u);
  EXPECT_EQ(k.owners[1].peak_place.text, "in step 4");  // no phase: no Python, no autograd
  auto has = [&](const std::string& text) {
    return std::any_of(r.findings.begin(), r.findings.end(),
                       [&](const std::string& f) { return f == text; });
  };
  EXPECT_TRUE(
      has("Peak 19.00 MiB on GPU 0 (python3 pid 1) at 2.900 us, in step 3's backward: "
          "PyTorch caching allocator 19.00 MiB."))
      << ::testing::PrintToString(r.findings);
  EXPECT_TRUE(has("cuBLASLt peaked at 2.00 MiB on GPU 0 (python3 pid 1) at 4.200 us, in step 4."))
      << ::testing::PrintToString(r.findings);
  // Text and JSON.
  std::ostringstream text, json;
  WriteMemoryText(r, {}, text);
  EXPECT_NE(text.str().find("peak 19.00 MiB at 2.900 us, in step 3's backward (allocated on the "
                            "autograd engine's thread) (3 blocks)"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("steps: 5 (repeating kernel sequence; bounds on the host: launch "
                            "calls)"),
            std::string::npos)
      << text.str();
  WriteMemoryJson(r, json);
  const auto j = nlohmann::json::parse(json.str())["memory"][0];
  EXPECT_EQ(j["peak_place"]["where"], "step");
  EXPECT_EQ(j["peak_place"]["step"], 3);
  EXPECT_EQ(j["peak_place"]["phase"], "backward");
  EXPECT_EQ(j["peak_place"]["text"], "in step 3's backward");
  EXPECT_EQ(j["steps"]["count"], 5);
  EXPECT_EQ(j["steps"]["bounds"], "launch calls");
  EXPECT_EQ(j["owners"][1]["peak_place"]["step"], 4);
}

// Each allocation of the loop placed on its own (--at does not place; the
// owners' peaks do): the same loop with one owner per allocation kind.
TEST(MemoryReportTest, StepsPlaceEveryPhaseAndTheInstantsOutsideSteps) {
  TrainingLoop loop;
  const model::Trace& t = loop.s.b.trace();
  EXPECT_EQ(PhaseOfStack(t, loop.activation),
            (std::pair<std::string, std::string>{
                "forward", "allocated under Module._call_impl (torch/nn/modules/module.py:1775)"}));
  EXPECT_EQ(PhaseOfStack(t, loop.grad).first, "backward");
  EXPECT_EQ(PhaseOfStack(t, loop.optimizer),
            (std::pair<std::string, std::string>{
                "optimizer", "allocated under _multi_tensor_adam (torch/optim/adam.py:795)"}));
  EXPECT_EQ(PhaseOfStack(t, loop.weights).first, "");  // Module.to is not a forward
  EXPECT_EQ(PhaseOfStack(t, loop.workspace).first, "");
  EXPECT_EQ(PhaseOfStack(t, 0).first, "");
  // The steps on the host: from the launch of each step's fwd.
  tracesmith::testing::TempPath path;
  ASSERT_TRUE(format::WriteTraceFile(t, path.path()).ok());
  auto reader = format::SbtReader::Open(path.path());
  ASSERT_TRUE(reader.ok());
  ProcessSteps steps;
  ASSERT_TRUE(steps.Read(**reader, 1).ok());
  ASSERT_EQ(steps.spans().size(), 5u);
  for (size_t i = 0; i + 1 < 5; ++i)
    EXPECT_EQ(steps.spans()[i], (std::pair<uint64_t, uint64_t>{1000 + 1000 * i, 2000 + 1000 * i}));
  EXPECT_EQ(steps.spans()[4], (std::pair<uint64_t, uint64_t>{5000, 5610}));
  auto text_at = [&](uint64_t ts, const char* phase = "") {
    StepPlace p = steps.Place(ts);
    p.phase = phase;
    return StepPlaceText(p);
  };
  EXPECT_EQ(text_at(500), "before step 1");
  EXPECT_EQ(text_at(1100, "forward"), "in step 1's forward");
  EXPECT_EQ(text_at(1620, "optimizer"), "in step 1's optimizer update");
  EXPECT_EQ(text_at(1999), "in step 1");
  EXPECT_EQ(text_at(2000), "in step 2");
  EXPECT_EQ(text_at(5610), "in step 5");  // the last step's end is in it
  EXPECT_EQ(text_at(5611), "after step 5, the last");
  EXPECT_EQ(text_at(5611, "backward"), "after step 5, the last, in a backward pass");
  // Without steps, a phase alone.
  EXPECT_EQ(StepPlaceText(StepPlace{.phase = "optimizer"}), "in an optimizer update");
  EXPECT_EQ(StepPlaceText(StepPlace{.phase = "forward"}), "in a forward pass");
  EXPECT_EQ(StepPlaceText(StepPlace{}), "");
  EXPECT_EQ(StepPlaceText(StepPlace{.where = StepPlace::kBetween, .step = 3}),
            "between steps 3 and 4");
  EXPECT_EQ(StepPlaceText(StepPlace{
                .where = StepPlace::kInStep, .step = 1, .warmup = true, .phase = "backward"}),
            "in step 1's backward (the warm-up)");
}

// Without launch calls (kernels only) the steps' bounds are the GPU's: the
// same peak then reads step 2, the GPU's step at that instant; said so.
TEST(MemoryReportTest, StepsWithoutLaunchCallsAreBoundedByGpuTimes) {
  TrainingLoop loop(/*launch_calls=*/false);
  MemoryReport r = Build(loop.s.b.trace(), {}, 1024);
  ASSERT_EQ(r.keys.size(), 1u);
  EXPECT_EQ(r.keys[0].steps.bounds, "GPU times");
  EXPECT_EQ(r.keys[0].steps.count, 5u);
  EXPECT_EQ(r.keys[0].peak_place.text, "in step 2's backward");
  EXPECT_EQ(r.keys[0].owners[0].peak_place.text, "in step 2's backward");
}

// Steps from NVTX ranges (the host's own), the phase from the NVTX ranges open
// at the peak when the allocation has no stack: the outermost that names one.
TEST(MemoryReportTest, NvtxStepsAndPhaseRangesPlaceAStacklessPeak) {
  testing::TraceBuilder b(1);
  auto& rows = b.trace().Rows<model::MemoryEvent>();
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t h = 1000 + 1000 * i;
    b.Nvtx("step " + std::to_string(i + 1), h, h + 900);
    b.Nvtx("forward", h + 10, h + 300);
    b.Nvtx("loss.backward()", h + 300, h + 700);
    b.Nvtx("aten::mm", h + 400, h + 450, /*tid=*/2);  // names no phase
    b.Nvtx("Optimizer.step#AdamW.step", h + 700, h + 890);
    rows.push_back(Ev(h + 420, model::kMemoryAlloc, 0x1000, (i == 1 ? 6 : 3) * kMiB));
    rows.push_back(Ev(h + 800, model::kMemoryFree, 0x1000, 0));
  }
  rows.push_back(Ev(4950, model::kMemoryAlloc, 0x2000, 1 * kMiB));  // between the ranges' end
  MemoryReport r = Build(b.trace(), {}, 1024);
  ASSERT_EQ(r.keys.size(), 1u);
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.steps.method, "NVTX step ranges");
  EXPECT_EQ(k.steps.bounds, "NVTX ranges");
  EXPECT_EQ(k.peak_bytes, 6 * kMiB);
  EXPECT_EQ(k.peak_place.text, "in step 2's backward");
  EXPECT_EQ(k.peak_place.evidence, "inside NVTX range 'loss.backward()'");
  EXPECT_EQ(k.peak_nvtx_range, "aten::mm");  // the innermost, as before
  EXPECT_EQ(PhaseOfRangeName("autograd::engine::evaluate_function: AddmmBackward0"), "backward");
  EXPECT_EQ(PhaseOfRangeName("Optimizer.zero_grad#AdamW.zero_grad"), "optimizer");
  EXPECT_EQ(PhaseOfRangeName("Forward"), "forward");
  EXPECT_EQ(PhaseOfRangeName("forward_backward"), "");  // names two
  EXPECT_EQ(PhaseOfRangeName("ProfilerStep#3"), "");
}

// The shipped transformer capture: its peak's step, checked against steps
// found and bounded the way analyze does it (LoadCompactTrace, DetectSteps,
// each step's first kernel's launch call through CallOfOp).
TEST(MemoryReportTest, TheShippedTransformerPeakIsPlacedInTheStepAnalyzeFinds) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  const std::string path = std::string(src ? src : ".") + "/examples/traces/transformer_train.sbt";
  CompactTrace c;
  ASSERT_TRUE(LoadCompactTrace(path, {}, &c).ok());
  const StepReport steps = DetectSteps(c);
  ASSERT_EQ(steps.steps.size(), 10u);
  std::vector<uint64_t> host_begin;
  for (const Step& s : steps.steps)
    for (uint32_t i = 0; i < c.ops().size(); ++i)
      if (c.ops()[i].kind() == OpKind::kKernel && c.ops()[i].start_ns == s.begin_ns) {
        host_begin.push_back(c.CallSpanOfOp(i).start);
        break;
      }
  ASSERT_EQ(host_begin.size(), 10u);
  MemoryReport r;
  ASSERT_TRUE(BuildMemoryReport(path, {}, &r).ok());
  const MemoryKeyReport& k = r.keys[0];
  EXPECT_EQ(k.steps.count, 10u);
  EXPECT_EQ(k.steps.bounds, "launch calls");
  EXPECT_EQ(k.steps.warmup, 2u);  // analyze's warm-up: steps 1-2
  const uint64_t peak = r.start_ns + k.at_peak.ts_ns;
  const size_t in =
      size_t(std::upper_bound(host_begin.begin(), host_begin.end(), peak) - host_begin.begin());
  ASSERT_GT(in, 0u) << "the peak is before the first step";
  EXPECT_EQ(k.peak_place.step, in);
  if (in < 10) {
    EXPECT_EQ(k.peak_place.where, StepPlace::kInStep);
  }
  EXPECT_EQ(k.peak_place.phase, "");  // no stacks on its allocations, no NVTX ranges
}

}  // namespace
}  // namespace tracesmith::analysis
