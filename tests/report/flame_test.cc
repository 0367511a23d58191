// Flame-graph data (report/flame.h): hand-built traces with known stacks and
// op times, so every weight is known exactly (the threads' start-up frames at
// the root as one box per thread, in the folded text and the page alike);
// then the folded export of a shipped real capture against its golden file.
#include "tracesmith/report/flame.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/test_traces.h"
#include "testing/pc_sample_trace.h"
#include "testing/temp_dir.h"
#include "tracesmith/analysis/pc_profile.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/report/html_report.h"

namespace tracesmith::report {
namespace {

using analysis::testing::StackMaker;

analysis::CompactTrace Compact(const model::Trace& t) {
  analysis::CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return c;
}

std::string Folded(const FoldedStacks& f) {
  std::ostringstream out;
  WriteFolded(f, out);
  return out.str();
}

// Two stacks whose frames differ only in return addresses (same labels), one
// other stack, launches without a stack, a copy and a memset.
struct Fixture {
  StackMaker s;
  Fixture() {
    const uint32_t app = s.Module(1, "/x/app"), rt = s.Module(2, "/x/libcudart.so.13");
    const uint32_t main_a = s.Native(app, "main", 0x100), main_b = s.Native(app, "main", 0x180);
    const uint32_t launch = s.Native(rt, "", 0x1376d);
    const uint32_t py = s.Python("train", "train.py", 7);
    const uint32_t a = s.Stack({launch, py, main_a});
    const uint32_t b = s.Stack({launch, py, main_b});  // same labels as `a`
    const uint32_t c = s.Stack({s.Native(app, "helper;odd"), main_a});
    auto& t = s.b;
    t.Kernel("gemm", 0, 7, 100, 110, 90, 95, 0, a);            // 10 ns
    t.Kernel("gemm", 0, 7, 120, 127, 112, 115, 0, b);          // 7 ns, merges with the first
    t.Kernel("relu", 0, 7, 130, 135, 128, 129, 0, a);          // 5 ns
    t.Kernel("gemm", 0, 7, 140, 143, 136, 137, 0, c);          // 3 ns
    t.Kernel("relu", 0, 7, 150, 152, 146, 147);                // 2 ns, API call without a stack
    t.Kernel("relu", 0, 7, 160, 164);                          // 4 ns, no API call at all
    t.Memcpy(model::kCopyHtoD, 64, 0, 7, 170, 180, 165, 166);  // 10 ns
    t.Memset(64, 0, 7, 190, 191);                              // 1 ns
  }
};

TEST(FlameTest, GpuTimeWeightsAreExactAndIdenticalStacksMerge) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kGpuTime);
  EXPECT_EQ(Folded(folded),
            "(no stack);[memcpy HtoD] 10\n"
            "(no stack);[memset] 1\n"
            "(no stack);relu 6\n"
            "main;helper_odd;gemm 3\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;gemm 17\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;relu 5\n");
  EXPECT_EQ(folded.total, 42u);
  EXPECT_EQ(folded.ops, 8u);
  EXPECT_EQ(folded.ops_without_stack, 4u);
}

// torch.compile (model/compiled_lines.h): the model's frames above the
// generated line that launched the kernel; the graph's nodes where Dynamo
// recorded no line; other generated lines as they are.
TEST(FlameTest, CompiledKernelsGrowTheModelsFrames) {
  StackMaker s;
  const uint32_t launch = s.Native(s.Module(2, "/x/libcuda.so.1"), "", 0x10);
  const std::string gen = "/tmp/torchinductor_u/ab/cab.py";
  const uint32_t step = s.Python("step", "train.py", 9);
  const uint32_t a = s.Stack({launch, s.Python("Runner.call", gen, 11), step});
  const uint32_t b = s.Stack({launch, s.Python("Runner.call", gen, 20), step});
  const uint32_t c = s.Stack({launch, s.Python("Runner.call", gen, 30), step});
  model::Trace& t = s.b.trace();
  auto add = [&](uint32_t line, const model::CompiledLine& v) {
    t.Rows<model::MetadataEntry>().push_back(
        model::MetadataEntry{.key_id = t.strings.Intern(model::CompiledLineKey(gen, line)),
                             .value_id = t.strings.Intern(model::EncodeCompiledLine(v))});
  };
  add(11, {{{{"forward", "/m/model.py", 30}, {"forward", "/m/block.py", 17}}}, {}});
  add(20, {{}, {"linear", "gelu"}});
  s.b.Kernel("gelu", 0, 7, 100, 110, 90, 95, 0, a);
  s.b.Kernel("mm", 0, 7, 120, 125, 112, 115, 0, b);
  s.b.Kernel("add", 0, 7, 130, 132, 128, 129, 0, c);
  EXPECT_EQ(Folded(FoldStacks(Compact(t), FlameWeight::kGpuTime)),
            "step (train.py:9);Runner.call (/tmp/torchinductor_u/ab/cab.py:30);libcuda.so.1+0x10;"
            "add 2\n"
            "step (train.py:9);compiled linear, gelu;Runner.call "
            "(/tmp/torchinductor_u/ab/cab.py:20);libcuda.so.1+0x10;mm 5\n"
            "step (train.py:9);forward (/m/model.py:30);forward (/m/block.py:17);Runner.call "
            "(/tmp/torchinductor_u/ab/cab.py:11);libcuda.so.1+0x10;gelu 10\n");
}

TEST(FlameTest, LaunchWeightCountsOps) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kLaunches);
  EXPECT_EQ(Folded(folded),
            "(no stack);[memcpy HtoD] 1\n"
            "(no stack);[memset] 1\n"
            "(no stack);relu 2\n"
            "main;helper_odd;gemm 1\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;gemm 2\n"
            "main;train (train.py:7);libcudart.so.13+0x1376d;relu 1\n");
  EXPECT_EQ(folded.total, 8u);
}

// GPU frames: a sampled kernel's time split by its samples' source lines and
// instructions (testing/pc_sample_trace.h: probe_hot's 2000 counted samples,
// 1994 at +0x300 on kernels.cu:66 and 6 at +0x310 on line 60, its SASS text
// added here for +0x300); probe_fma has no line info. The launch weight keeps
// the kernel as the leaf.
TEST(FlameTest, SampledKernelsGrowGpuFrames) {
  tracesmith::testing::PcSampleTraceOptions o;
  o.mem_ns = 4'000'000, o.fma_ns = 3'000'000, o.hot_ns = 2'000'000;
  model::Trace t = tracesmith::testing::PcSampleTrace(o);
  model::PcSass sass{};
  sass.pc_offset = 0x300;
  sass.text_id = t.strings.Intern("IMAD R5, R5, 0x19660d, RZ");
  sass.pid = 100;
  sass.cubin_crc = 0xC0FFEE;
  sass.function_id = t.strings.Intern("_Z9probe_hotPfi");
  t.Rows<model::PcSass>().push_back(sass);
  const std::string folded = Folded(FoldStacks(Compact(t), FlameWeight::kGpuTime));
  EXPECT_NE(folded.find("(no stack);probe_hot(float*, int);kernels.cu:66;+0x0300 IMAD R5, R5, "
                        "0x19660d, RZ 1994000\n"),
            std::string::npos)
      << folded;
  EXPECT_NE(folded.find("(no stack);probe_hot(float*, int);kernels.cu:60;+0x0310 6000\n"),
            std::string::npos)
      << folded;
  // probe_fma: 1000 samples, 650 at +0x40 and 350 at +0x50, no lines.
  EXPECT_NE(folded.find("probe_fma(float*, int);(no line info);+0x0040 1950000\n"),
            std::string::npos)
      << folded;
  EXPECT_NE(folded.find("probe_fma(float*, int);(no line info);+0x0050 1050000\n"),
            std::string::npos)
      << folded;
  const FoldedStacks launches = FoldStacks(Compact(t), FlameWeight::kLaunches);
  EXPECT_NE(Folded(launches).find("(no stack);probe_hot(float*, int) 2\n"), std::string::npos);
  // Without samples: the kernel is the leaf, as before.
  o.samples = false;
  EXPECT_EQ(
      Folded(FoldStacks(Compact(tracesmith::testing::PcSampleTrace(o)), FlameWeight::kGpuTime)),
      "(no stack);probe_fma(float*, int) 3000000\n"
      "(no stack);probe_hot(float*, int) 2000000\n"
      "(no stack);probe_mem(float const*, float*, int) 4000000\n");
}

// Past the hottest instructions the rest stays under its line (an unrolled
// loop spreads one line over many instructions): probe_mem's +0x100 (810
// samples, line 42), then +0x180 (170, line 40) and +0x200 (20, no line).
TEST(FlameTest, InstructionProfileKeepsTheRestUnderItsLine) {
  const analysis::CompactTrace c = Compact(tracesmith::testing::PcSampleTrace());
  const auto profiles = analysis::InstructionProfiles(c, 1);
  const analysis::FunctionProfile* mem = nullptr;
  for (const auto& [key, p] : profiles)
    if (c.String(static_cast<uint32_t>(key)).starts_with("probe_mem")) mem = &p;
  ASSERT_NE(mem, nullptr);
  EXPECT_EQ(mem->samples, 1000u);
  ASSERT_EQ(mem->instructions.size(), 3u);
  EXPECT_EQ(mem->instructions[0].line, "kernels.cu:42");
  EXPECT_EQ(mem->instructions[0].instruction, "+0x0100");
  EXPECT_EQ(mem->instructions[0].samples, 810u);
  EXPECT_EQ(mem->instructions[1].line, "(no line info)");
  EXPECT_EQ(mem->instructions[1].instruction, "(1 other instructions)");
  EXPECT_EQ(mem->instructions[1].samples, 20u);
  EXPECT_EQ(mem->instructions[2].line, "kernels.cu:40");
  EXPECT_EQ(mem->instructions[2].samples, 170u);
}

TEST(FlameTest, SeveralProcessesStartWithTheProcess) {
  analysis::testing::TraceBuilder b(10);
  b.Kernel("k", 0, 7, 100, 110, 90, 95);
  b.Pid(20);
  b.Kernel("k", 0, 7, 100, 103, 90, 95);
  const FoldedStacks folded = FoldStacks(Compact(b.trace()), FlameWeight::kGpuTime);
  EXPECT_EQ(Folded(folded), "pid 10;(no stack);k 10\npid 20;(no stack);k 3\n");
}

TEST(FlameTest, WeightNamesParse) {
  EXPECT_EQ(ParseFlameWeight("gpu-time").value(), FlameWeight::kGpuTime);
  EXPECT_EQ(ParseFlameWeight("launches").value(), FlameWeight::kLaunches);
  auto bad = ParseFlameWeight("time");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpu-time"), std::string::npos);
}

TEST(FlameTest, TreeSumsPrefixesAndPrunesSmallSubtrees) {
  Fixture f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kGpuTime);
  FlameTree tree = BuildFlameTree(folded);
  EXPECT_EQ(tree.root.value, 42u);
  ASSERT_EQ(tree.root.children.size(), 2u);  // main (25), (no stack) (17)
  EXPECT_EQ(tree.names[tree.root.children[0].name], "main");
  EXPECT_EQ(tree.root.children[0].value, 25u);
  EXPECT_EQ(tree.names[tree.root.children[1].name], "(no stack)");
  EXPECT_EQ(tree.root.children[1].value, 17u);
  const FlameNode& train = tree.root.children[0].children[0];
  EXPECT_EQ(tree.names[train.name], "train (train.py:7)");
  EXPECT_EQ(train.value, 22u);
  EXPECT_EQ(tree.nodes, 12u);  // all, main, train, cudart, gemm, relu, helper, gemm, none, 3 leaves
  EXPECT_EQ(tree.pruned_nodes, 0u);

  // Under 4: helper_odd's subtree (3) and the memset (1) go; values stay.
  FlameTree pruned = BuildFlameTree(folded, 4);
  EXPECT_EQ(pruned.root.value, 42u);
  EXPECT_EQ(pruned.root.children[0].value, 25u);
  EXPECT_EQ(pruned.root.children[0].children.size(), 1u);
  EXPECT_EQ(pruned.pruned_nodes, 2u);
  EXPECT_EQ(pruned.nodes, 9u);

  // At most 5 nodes: all 42, main 25, train 22, cudart 22, then of the two
  // tied at 17 the one that appeared first; a cap, ties or not.
  FlameTree capped = BuildFlameTree(folded, 0, 5);
  EXPECT_EQ(capped.nodes, 5u);
  EXPECT_EQ(capped.root.value, 42u);
}

// Many stacks of one launch each (every value tied): the cap still holds.
TEST(FlameTest, CapHoldsWhenEveryValueTies) {
  FoldedStacks folded;
  folded.weight = FlameWeight::kLaunches;
  for (int i = 0; i < 1000; ++i)
    folded.lines.push_back({"main;site" + std::to_string(1000 + i) + ";k", 1});
  folded.total = 1000;
  FlameTree capped = BuildFlameTree(folded, 1, 50);
  EXPECT_EQ(capped.nodes, 50u);
  EXPECT_EQ(capped.root.value, 1000u);
  EXPECT_EQ(capped.root.children.size(), 1u);  // main, then the sites that fit
}

// Stacks as PyTorch's threads give them: the thread's start-up at the root
// (libc's and libstdc++'s frames, named or bare offsets, the executable's
// unsymbolized _start) becomes one box naming the thread.
struct ThreadStacks {
  StackMaker s;
  ThreadStacks() {
    const uint32_t exe = s.Module(1, "/usr/bin/python3.12");
    const uint32_t libc = s.Module(2, "/lib/x86_64-linux-gnu/libc.so.6");
    const uint32_t cxx = s.Module(3, "/lib/x86_64-linux-gnu/libstdc++.so.6");
    const uint32_t torch = s.Module(4, "/x/torch/lib/libtorch_cpu.so");
    const uint32_t rt = s.Module(5, "/x/libcudart.so.13");
    const uint32_t app = s.Module(6, "/home/u/app");
    const uint32_t launch = s.Native(rt, "", 0x1376d);
    // Main thread, unsymbolized start-up as on the GPU machine.
    const uint32_t main_stack = s.Stack(
        {launch, s.Python("forward", "train.py", 7), s.Native(exe, "Py_BytesMain", 0x10),
         s.Native(libc, "", 0x2a1ca), s.Native(libc, "", 0x2a28b), s.Native(exe, "", 0x657a05)});
    // The autograd engine's device thread: bare offsets above its entry, and
    // (another capture's) the same start-up named; both are one box.
    const std::string init =
        "torch::autograd::python::PythonEngine::thread_init(int, "
        "std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)";
    const uint32_t mm = s.Native(torch, "torch::autograd::generated::MmBackward0::apply(...)");
    const uint32_t thread_main =
        s.Native(torch, "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&)");
    const uint32_t bare =
        s.Stack({launch, mm, thread_main, s.Native(torch, init, 0x100), s.Native(cxx, "", 0xecdb4),
                 s.Native(libc, "", 0x9cb84), s.Native(libc, "", 0x129ecc)});
    const uint32_t named =
        s.Stack({launch, mm, thread_main, s.Native(torch, init, 0x180),
                 s.Native(cxx, "execute_native_thread_routine", 0xecdb4),
                 s.Native(libc, "start_thread", 0x9cb84), s.Native(libc, "clone3", 0x129ecc)});
    // A std::thread of the program: named by the function it runs.
    const uint32_t worker_fn = s.Native(app, "worker_loop(int)", 0x40);
    const uint32_t worker = s.Stack(
        {launch, worker_fn,
         s.Native(app,
                  "std::thread::_State_impl<std::thread::_Invoker<std::tuple<void (*)(int), "
                  "int> > >::_M_run()",
                  0x50),
         s.Native(cxx, "", 0xecdb4), s.Native(libc, "", 0x9cb84), s.Native(libc, "", 0x129ecc)});
    // Stacks that do not reach their thread's start keep their root.
    const uint32_t cut = s.Stack({launch, worker_fn});
    const uint32_t only_libc = s.Stack({s.Native(libc, "", 0x9cb84), s.Native(libc, "", 0x129ecc)});
    auto& t = s.b;
    t.Kernel("fwd", 0, 7, 100, 110, 90, 95, 0, main_stack);   // 10
    t.Kernel("mm", 0, 7, 120, 125, 112, 115, 0, bare);        // 5
    t.Kernel("mm", 0, 7, 130, 133, 128, 129, 0, named);       // 3, merges with the 5
    t.Kernel("work", 0, 7, 140, 142, 136, 137, 0, worker);    // 2
    t.Kernel("work", 0, 7, 150, 151, 146, 147, 0, cut);       // 1
    t.Kernel("odd", 0, 7, 160, 161, 156, 157, 0, only_libc);  // 1
  }
};

TEST(FlameTest, ThreadStartFramesAreOneBoxNamingTheThread) {
  ThreadStacks f;
  const FoldedStacks folded = FoldStacks(Compact(f.s.b.trace()), FlameWeight::kGpuTime);
  EXPECT_EQ(Folded(folded),
            "libc.so.6+0x129ecc;libc.so.6+0x9cb84;odd 1\n"
            "thread: autograd;torch::autograd::python::PythonEngine::thread_init(int, "
            "std::shared_ptr<torch::autograd::ReadyQueue> const&, bool);"
            "torch::autograd::Engine::thread_main(std::shared_ptr<GraphTask> const&);"
            "torch::autograd::generated::MmBackward0::apply(...);libcudart.so.13+0x1376d;mm 8\n"
            "thread: main;Py_BytesMain;forward (train.py:7);libcudart.so.13+0x1376d;fwd 10\n"
            "thread: worker_loop;std::thread::_State_impl<std::thread::_Invoker<std::tuple<void "
            "(*)(int), int> > >::_M_run();worker_loop(int);libcudart.so.13+0x1376d;work 2\n"
            "worker_loop(int);libcudart.so.13+0x1376d;work 1\n");
  EXPECT_EQ(folded.total, 22u);
  // The tree the page draws: the threads side by side under the root.
  const FlameTree tree = BuildFlameTree(folded);
  ASSERT_GE(tree.root.children.size(), 3u);
  EXPECT_EQ(tree.names[tree.root.children[0].name], "thread: main");
  EXPECT_EQ(tree.names[tree.root.children[1].name], "thread: autograd");
  EXPECT_EQ(tree.root.children[1].value, 8u);
}

TEST(FlameTest, ThreadRootOfOneStack) {
  ThreadStacks f;
  const model::Trace& t = f.s.b.trace();
  auto frames = [&](size_t api) {
    return model::StackFrames(t, t.Rows<model::ApiEvent>()[api].stack_id);
  };
  ThreadRoot main_root = FindThreadRoot(t, frames(0));
  EXPECT_EQ(main_root.start_frames, 3u);  // _start, __libc_start_main, __libc_start_call_main
  EXPECT_EQ(main_root.label, "thread: main");
  ThreadRoot autograd = FindThreadRoot(t, frames(1));
  EXPECT_EQ(autograd.start_frames, 3u);  // clone3, start_thread, execute_native_thread_routine
  EXPECT_EQ(autograd.label, "thread: autograd");
  EXPECT_EQ(FindThreadRoot(t, frames(4)).start_frames, 0u);
  EXPECT_EQ(FindThreadRoot(t, frames(5)).start_frames, 0u);  // nothing left after them
  EXPECT_EQ(FindThreadRoot(t, {}).start_frames, 0u);
}

// The report's flame graph and `export -f folded` of one trace file: the same
// stacks, thread boxes included, and the same weights at the root.
TEST(FlameTest, ReportAndFoldedExportAgreeOnThreadBoxes) {
  ThreadStacks f;
  tracesmith::testing::TempDir dir;
  const std::string sbt = dir / "threads.sbt", out = dir / "threads.folded";
  ASSERT_TRUE(format::WriteTraceFile(f.s.b.trace(), sbt).ok());
  auto stats = WriteFoldedFile(sbt, out, FlameWeight::kGpuTime);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  auto text = ReadFileToString(out);
  ASSERT_TRUE(text.ok());
  std::map<std::string, uint64_t> folded_roots;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);)
    folded_roots[line.substr(0, line.find(';'))] += std::stoull(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(folded_roots.count("thread: main"), 1u);
  EXPECT_EQ(folded_roots.count("thread: autograd"), 1u);
  for (const auto& [root, w] : folded_roots)
    EXPECT_EQ(root.find("libstdc++"), std::string::npos) << root;

  auto html = BuildHtmlReport(sbt, sbt, HtmlReportOptions{});
  ASSERT_TRUE(html.ok()) << html.status().ToString();
  const std::string open = "<script type=\"application/json\" id=\"ts-page\">";
  const size_t begin = html->find(open) + open.size();
  const nlohmann::json page =
      nlohmann::json::parse(html->substr(begin, html->find("</script>", begin) - begin));
  std::map<std::string, uint64_t> page_roots;
  for (const auto& child : page["flame"]["tree"][2])
    page_roots[page["flame"]["names"][child[0].get<size_t>()]] = child[1];
  EXPECT_EQ(page_roots, folded_roots);
}

// `export -f folded` of a shipped capture (native stacks, symbolized):
// compared with tests/report/golden/launch_loop.folded
// (TS_UPDATE_GOLDEN=1 rewrites it, and the test fails: nothing was compared).
TEST(FlameTest, FoldedExportOfRealTraceMatchesGolden) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::string dir(src);
  auto folded = FoldStacksOfFile(dir + "/examples/traces/launch_loop.sbt", FlameWeight::kGpuTime);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(folded->ops_without_stack, 0u);
  const std::string text = Folded(*folded);
  const std::string golden = dir + "/tests/report/golden/launch_loop.folded";
  if (std::getenv("TS_UPDATE_GOLDEN")) {
    ASSERT_TRUE(WriteStringToFile(golden, text).ok());
    FAIL() << "rewrote " << golden
           << " (TS_UPDATE_GOLDEN is set: nothing compared; review the diff, then run again "
              "without it)";
  }
  auto want = ReadFileToString(golden);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_EQ(text, *want);
}

}  // namespace
}  // namespace tracesmith::report
