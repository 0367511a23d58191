// Launch call sites that name code (issue #14 item 1): hand-built stacks for
// each rule, then the real captures shipped in examples/traces.
#include "tracesmith/timeline/call_site.h"
#include "testing/source_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <tuple>

#include "test_traces.h"
#include "tracesmith/model/compiled_lines.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::analysis {
namespace {

using model::Frame;

using Stacks = testing::StackMaker;

TEST(CallSiteTest, CxxProgramIsAttributedToItsOwnFunctionNotCudart) {
  Stacks s;
  const uint32_t prog = s.Module(1, "/home/u/launch_loop"), libc = s.Module(2, "/lib/libc.so.6");
  const uint32_t id =
      s.Stack({s.Native(prog, "libcudart_static_4d8b33a1"), s.Native(prog, "cudaLaunchKernel"),
               s.Native(prog, "__device_stub__Z4tinyPfi(float*, int)"), s.Native(prog, "main"),
               s.Native(libc, "__libc_start_main"), s.Native(prog, "_start")});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(id), "main");
  EXPECT_EQ(namer.Name(0), "(no stack)");
}

// A user's own helpers named like CUDA calls are the user's code.
TEST(CallSiteTest, UserFunctionsNamedLikeCudaAreKept) {
  Stacks s;
  const uint32_t prog = s.Module(1, "/home/u/app");
  const uint32_t check = s.Stack({s.Native(prog, "cudaLaunchKernel"),
                                  s.Native(prog, "cudaCheck(cudaError)"), s.Native(prog, "main")});
  const uint32_t foo =
      s.Stack({s.Native(prog, "cuLaunchKernel"), s.Native(prog, "cuFoo"), s.Native(prog, "main")});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(check), "cudaCheck(cudaError)");
  EXPECT_EQ(namer.Name(foo), "cuFoo");
}

TEST(CallSiteTest, UnsymbolizedFramesNameTheirModule) {
  Stacks s;
  const uint32_t cudart = s.Module(1, "/x/libcudart.so.13"), app = s.Module(2, "/x/libapp.so");
  const uint32_t id = s.Stack({s.Native(cudart, "", 0x1376d), s.Native(app, "", 0x2040)});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(id), "libapp.so+0x2040");
  // Only runtime frames: the innermost, with its module.
  const uint32_t only = s.Stack({s.Native(cudart, "", 0x1376d)});
  EXPECT_EQ(namer.Name(only), "libcudart.so.13+0x1376d");
}

TEST(CallSiteTest, PythonLineFirstThenAutogradNodeOnTheBackwardThread) {
  Stacks s;
  const uint32_t cudart = s.Module(1, "/x/libcudart.so.13"), torch = s.Module(2, "/x/libtorch.so");
  const uint32_t launch = s.Native(cudart, "", 0x1376d);
  const uint32_t py = s.Stack({launch, s.Native(torch, "at::native::addmm_out"),
                               s.Python("Linear.forward", "linear.py", 125)});
  const uint32_t engine = s.Native(torch, "torch::autograd::Engine::thread_main(x)");
  const uint32_t bwd =
      s.Stack({launch, s.Native(torch, "at::native::mm"),
               s.Native(torch, "torch::autograd::generated::MmBackward0::apply(std::vector&&)"),
               s.Native(torch, "torch::autograd::Node::operator()(std::vector&&)"), engine});
  const uint32_t engine_step = s.Stack(
      {launch, s.Native(torch, "at::native::sum"),
       s.Native(torch, "torch::autograd::VariableType::(anonymous namespace)::sum(x)"),
       s.Native(torch, "torch::autograd::InputMetadata::reduce_grad(at::Tensor&) const"), engine});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(py), "Linear.forward (linear.py:125)");
  EXPECT_EQ(namer.Name(bwd), "autograd backward: MmBackward0");
  EXPECT_EQ(namer.Name(engine_step),
            "autograd backward: torch::autograd::InputMetadata::reduce_grad");
}

TEST(CallSiteTest, RulesAreConfigurable) {
  Stacks s;
  const uint32_t torch = s.Module(1, "/x/libtorch_cuda.so"), app = s.Module(2, "/x/app");
  const uint32_t id = s.Stack({s.Native(torch, "at::native::launch"), s.Native(app, "train")});
  EXPECT_EQ(CallSiteNamer(s.b.trace()).Name(id), "at::native::launch");
  CallSiteRules rules;
  rules.skip_modules = "^libtorch";
  EXPECT_EQ(CallSiteNamer(s.b.trace(), rules).Name(id), "train");
  EXPECT_TRUE(ValidateCallSiteRules(rules).ok());
  rules.skip_functions = "(unclosed";
  Status bad = ValidateCallSiteRules(rules);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("skip functions"), std::string::npos) << bad.message();
  EXPECT_EQ(CallSiteNamer(s.b.trace(), rules).Name(id), "train");  // no throw: matches nothing
}

// A launch from an installed package is named by the program's innermost
// line before it, then the package's frame, its path from the package down.
TEST(CallSiteTest, LibraryLinesComeWithTheProgramsLineBeforeThem) {
  Stacks s;
  const uint32_t cudart = s.Module(1, "/x/libcudart.so.13");
  const uint32_t launch = s.Native(cudart, "", 0x1376d);
  const std::string torch = "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/";
  const uint32_t linear = s.Python("Linear.forward", torch + "linear.py", 134);
  const uint32_t call_impl = s.Python("Module._call_impl", torch + "module.py", 1790);
  const uint32_t user = s.Python("Net.forward", "/home/u/proj/model.py", 57);
  const uint32_t script = s.Python("<module>", "/home/u/proj/train.py", 12);
  const uint32_t thread = s.Python("Thread.run", "/usr/lib/python3.12/threading.py", 1010);
  const uint32_t from_user = s.Stack({launch, linear, call_impl, user, script});
  const uint32_t only_library = s.Stack({launch, linear, call_impl, thread});
  const uint32_t user_first = s.Stack({launch, user, script});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(from_user),
            "Net.forward (model.py:57) > Linear.forward (torch/nn/modules/linear.py:134)");
  EXPECT_EQ(namer.Name(only_library), "Linear.forward (torch/nn/modules/linear.py:134)");
  EXPECT_EQ(namer.Name(user_first), "Net.forward (/home/u/proj/model.py:57)");
  // The standard library is a library too; --site-library-files replaces the rule.
  const uint32_t stdlib = s.Stack({launch, thread, script});
  EXPECT_EQ(namer.Name(stdlib), "<module> (train.py:12) > Thread.run (threading.py:1010)");
  CallSiteRules none;
  none.library_files = "^$";
  EXPECT_EQ(CallSiteNamer(s.b.trace(), none).Name(from_user),
            "Linear.forward (" + torch + "linear.py:134)");
  none.library_files = "(site-packages";
  Status bad = ValidateCallSiteRules(none);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("library files"), std::string::npos) << bad.message();
}

// torch.compile (issue #41 item 1): a launch through Inductor's generated code
// is named by the program's line that called the compiled model, then the
// generated line, not by Inductor's launcher.
TEST(CallSiteTest, CompiledCodeIsNamedByTheProgramsLineThenTheGeneratedLine) {
  Stacks s;
  const uint32_t cudart = s.Module(1, "/x/libcuda.so.1");
  const uint32_t launch = s.Native(cudart, "", 0x1376d);
  const std::string torch = "/opt/venv/lib/python3.12/site-packages/torch/";
  const uint32_t launcher = s.Python("launcher", "<string>", 5);
  const uint32_t run = s.Python("StaticallyLaunchedTritonKernel.run",
                                torch + "_inductor/runtime/static_triton_launcher.py", 291);
  const std::string generated = "/tmp/torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py";
  const uint32_t runner = s.Python("Runner.call", generated, 1915);
  const uint32_t call = s.Python("call", generated, 2010);
  const uint32_t fn = s.Python("_fn", torch + "_dynamo/eval_frame.py", 655);
  const uint32_t call_impl = s.Python("Module._call_impl", torch + "nn/modules/module.py", 1790);
  const uint32_t step = s.Python("train_step", "/home/u/proj/train.py", 41);
  const uint32_t script = s.Python("<module>", "/home/u/proj/train.py", 60);
  // Innermost first: Inductor's launcher (built from a string) calls the kernel's run.
  const uint32_t forward =
      s.Stack({launch, run, launcher, runner, call, fn, call_impl, step, script});
  const uint32_t backward = s.Stack({launch, run, launcher, runner, call});  // autograd thread
  const uint32_t launcher_only = s.Stack({launch, run, launcher, fn, call_impl, step, script});
  CallSiteNamer namer(s.b.trace());
  EXPECT_EQ(namer.Name(forward),
            "train_step (train.py:41) > Runner.call "
            "(torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py:1915)");
  EXPECT_EQ(namer.Name(backward),
            "Runner.call (torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py:1915)");
  // Code built from a string alone (a dataclass's __init__, exec) is not compiled code.
  EXPECT_EQ(namer.Name(launcher_only),
            "launcher (<string>:5) > StaticallyLaunchedTritonKernel.run "
            "(torch/_inductor/runtime/static_triton_launcher.py:291)");
  // A program file whose path looks like Inductor's is shown as it is.
  const uint32_t lookalike = s.Python("notes", "/home/u/torchinductor_notes/x.py", 3);
  EXPECT_EQ(namer.Name(s.Stack({launch, lookalike})), "notes (/home/u/torchinductor_notes/x.py:3)");
  // The program's own line nearer the launch than generated code: named as before.
  const uint32_t user_kernel = s.Python("my_op", "/home/u/proj/ops.py", 9);
  EXPECT_EQ(namer.Name(s.Stack({launch, user_kernel, runner, call, step})),
            "my_op (/home/u/proj/ops.py:9)");
  // Work the generated line asked a library for, not through a launcher (CUDA graph trees
  // copying a graph's inputs): the library's line, not the generated one.
  const uint32_t copy = s.Python("CUDAGraphNode._copy_inputs_and_remove_from_src",
                                 torch + "_inductor/cudagraph_trees.py", 1030);
  const uint32_t ops = s.Python("OpOverloadPacket.__call__", torch + "_ops.py", 1158);
  EXPECT_EQ(namer.Name(s.Stack({launch, ops, copy, runner, call, fn, step})),
            "train_step (train.py:41) > CUDAGraphNode._copy_inputs_and_remove_from_src "
            "(torch/_inductor/cudagraph_trees.py:1030)");
  // The operator dispatch alone between them: the generated line.
  EXPECT_EQ(namer.Name(s.Stack({launch, ops, runner, call, step})),
            "train_step (train.py:41) > Runner.call "
            "(torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py:1915)");
  // Without the rule, Inductor's launcher as before.
  CallSiteRules none;
  none.generated_files = "^$";
  EXPECT_EQ(CallSiteNamer(s.b.trace(), none).Name(forward),
            "launcher (<string>:5) > StaticallyLaunchedTritonKernel.run "
            "(torch/_inductor/runtime/static_triton_launcher.py:291)");
  none.generated_files = "(torchinductor";
  EXPECT_NE(ValidateCallSiteRules(none).message().find("generated files"), std::string::npos);
}

// With the model's lines in the trace (model/compiled_lines.h, written when the
// program ends): the line of the model the kernel came from, not the generated
// line; several lines of a fused kernel counted; lines without one as before.
TEST(CallSiteTest, CompiledCodeIsNamedByTheModelLineWhereTheTraceHasIt) {
  Stacks s;
  const uint32_t launch = s.Native(s.Module(1, "/x/libcuda.so.1"), "", 0x1376d);
  const std::string generated = "/tmp/torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py";
  const uint32_t gelu = s.Python("Runner.call", generated, 394);
  const uint32_t fused = s.Python("Runner.call", generated, 403);
  const uint32_t other = s.Python("Runner.call", generated, 359);
  const uint32_t step = s.Python("train_step", "/home/u/proj/train.py", 41);
  model::Trace& t = s.b.trace();
  auto add = [&](uint32_t line, const std::vector<model::ModelStack>& stacks,
                 std::vector<std::string> nodes = {}) {
    t.Rows<model::MetadataEntry>().push_back(model::MetadataEntry{
        .key_id = t.strings.Intern(model::CompiledLineKey(generated, line)),
        .value_id = t.strings.Intern(model::EncodeCompiledLine({stacks, std::move(nodes)}))});
  };
  const model::ModelFrame outer{"forward", "/home/u/proj/model.py", 30};
  add(394, {{outer, {"forward", "/home/u/proj/block.py", 17}}});
  add(403, {{{"forward", "/home/u/proj/block.py", 17}},
            {{"forward", "/home/u/proj/block.py", 16}},
            {{"forward", "/home/u/proj/block.py", 17}}});
  // torch.nn's own code: no lines, the graph's nodes.
  const uint32_t nn = s.Python("Runner.call", generated, 1425);
  const uint32_t many = s.Python("Runner.call", generated, 1430);
  add(1425, {}, {"linear", "gelu"});
  add(1430, {}, {"a", "b", "c", "d", "e"});
  // Inductor's cache elsewhere (TORCHINDUCTOR_CACHE_DIR): a file with entries is generated code.
  const std::string elsewhere = "/data/ic/ab/cabcdefghijklmnopqrstuvwxy.py";
  const uint32_t moved = s.Python("Runner.call", elsewhere, 50);
  t.Rows<model::MetadataEntry>().push_back(model::MetadataEntry{
      .key_id = t.strings.Intern(model::CompiledLineKey(elsewhere, 50)),
      .value_id = t.strings.Intern(
          model::EncodeCompiledLine({{{{"forward", "/home/u/proj/block.py", 19}}}, {}}))});
  CallSiteNamer namer(t);
  EXPECT_EQ(namer.Name(s.Stack({launch, moved, step})),
            "train_step (train.py:41) > forward (block.py:19)");
  EXPECT_EQ(namer.Name(s.Stack({launch, nn, step})),
            "train_step (train.py:41) > compiled linear, gelu");
  EXPECT_EQ(namer.Name(s.Stack({launch, many})), "compiled a, b, c (+2 nodes)");
  EXPECT_EQ(namer.Name(s.Stack({launch, gelu, step})),
            "train_step (train.py:41) > forward (block.py:17)");
  EXPECT_EQ(namer.Name(s.Stack({launch, gelu})), "forward (block.py:17)");  // autograd thread
  EXPECT_EQ(namer.Name(s.Stack({launch, fused})), "forward (block.py:17) (+1 lines)");
  EXPECT_EQ(namer.Name(s.Stack({launch, other, step})),
            "train_step (train.py:41) > Runner.call "
            "(torchinductor_u/rk/crk7zj6rqx4mwbt2yhe5fnlps3a.py:359)");
  // The entries' text survives a round trip, and a malformed line is skipped.
  const model::CompiledLine two{{{outer, {"f", "b.py", 2}}, {{"g", "c.py", 3}}}, {"x_1", "gelu"}};
  EXPECT_EQ(model::DecodeCompiledLine(model::EncodeCompiledLine(two)), two);
  EXPECT_EQ(model::DecodeCompiledLine("f\tb.py\tx\ng\tc.py\t3\n").stacks,
            (std::vector<model::ModelStack>{{{"g", "c.py", 3}}}));
  EXPECT_EQ(model::DecodeCompiledLine("#nodes linear\n").nodes, std::vector<std::string>{"linear"});
}

// The text report cuts a long call site in the middle, so that the program's
// line (first) and the library's file and line (last) both stay; kernel
// names are cut at the end as before.
TEST(CallSiteTest, TextTableKeepsBothEndsOfALongCallSite) {
  AnalysisReport r;
  const std::string site =
      "main.<locals>.train_one_epoch (my_training_script_v2.py:36) > "
      "_in_projection_packed (torch/nn/functional.py:5836)";
  ASSERT_GT(site.size(), 100u);
  r.call_sites.push_back(NamedStats{site, {}, 100});
  r.kernels.push_back(NamedStats{std::string(120, 'k'), {}, 100});
  std::ostringstream out;
  WriteTextReport(r, AnalyzeOptions{}, out);
  const std::string text = out.str();
  EXPECT_NE(text.find("  main.<locals>.train_on...aining_script_v2.py:36) > "
                      "_in_projection_packed (.../nn/functional.py:5836)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::string(87, 'k') + "...\n"), std::string::npos);
}

// Issue #43: GPU time whose call site is a native frame without a name is
// measured, and the text report names the command that fixes it, once; a
// symbolized trace (the same frames with names) gets no such line.
TEST(CallSiteTest, UnnamedNativeCallSitesAreCountedAndTheFixNamedOnce) {
  Stacks s;
  const uint32_t cudart = s.Module(1, "/x/libcudart.so.13");
  const uint32_t torch = s.Module(2, "/x/libtorch_cuda.so");
  const uint32_t launch = s.Native(cudart, "", 0x1376d);
  const uint32_t unnamed = s.Native(torch, "", 0x3a127c1);
  const uint32_t bwd = s.Stack({launch, unnamed, s.Native(torch, "", 0x1000)});
  const uint32_t fwd = s.Stack({launch, s.Python("Linear.forward", "linear.py", 125)});
  s.b.Kernel("gemm_bwd", 0, 7, 100, 114, 90, 95, 0, bwd);    // 14 ns
  s.b.Kernel("gemm_bwd", 0, 7, 120, 134, 115, 118, 0, bwd);  // 14 ns
  s.b.Kernel("gemm_fwd", 0, 7, 140, 212, 135, 138, 0, fwd);  // 72 ns
  auto report = [&] {
    CompactTrace c;
    c.IngestAll(s.b.trace());
    c.Finalize();
    AnalysisReport r = BuildReport(c, "run.sbt");
    std::ostringstream text, json;
    WriteTextReport(r, AnalyzeOptions{}, text);
    WriteJsonReport(r, json);
    return std::tuple{r, text.str(), json.str()};
  };
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  {
    auto [r, text, json] = report();
    EXPECT_DOUBLE_EQ(r.unnamed_call_site_share, 28.0);
    EXPECT_NE(text.find("libtorch_cuda.so+0x3a127c1\n"), std::string::npos) << text;  // its row
    EXPECT_EQ(count(text, "unnamed native frames"), 1u) << text;
    EXPECT_NE(text.find("call sites: 28.0% of GPU time under unnamed native frames "
                        "(module+offset) -- run `tracesmith symbolize run.sbt`"),
              std::string::npos)
        << text;
    EXPECT_NE(json.find("\"unnamed_call_site_share\":28"), std::string::npos) << json;
  }
  // Symbolized: the same frames with names (the autograd thread's now shows its node).
  for (model::Frame& f : s.b.trace().Rows<model::Frame>()) {
    if (f.mapping_id != torch) continue;
    f.function_id = s.b.Str(f.rel_pc == 0x1000 ? "torch::autograd::Engine::thread_main(x)"
                                               : "torch::autograd::generated::MmBackward0::"
                                                 "apply(std::vector&&)");
  }
  {
    auto [r, text, json] = report();
    EXPECT_EQ(r.unnamed_call_site_share, 0.0);
    EXPECT_EQ(count(text, "unnamed native frames"), 0u) << text;
    EXPECT_NE(text.find("autograd backward: MmBackward0\n"), std::string::npos) << text;
  }
}

AnalysisReport Analyze(const std::string& path) {
  CompactTrace c;
  LoadOptions o;
  o.active_region = true;
  EXPECT_TRUE(LoadCompactTrace(path, o, &c).ok());
  return BuildReport(c, path);
}

// A bf16 TransformerEncoder training run (6 steps, H100, stacks symbolized):
// forward launches from Python lines, backward ones on the autograd thread.
TEST(CallSiteTest, RealTransformerTraceNamesCodeEverywhere) {
  const std::string path = tracesmith::testing::ExampleTracePath("transformer_train.sbt");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  AnalysisReport r = Analyze(path);
  ASSERT_FALSE(r.call_sites.empty());
  uint64_t kernels = 0;
  bool autograd_node = false, python_line = false;
  for (const NamedStats& s : r.call_sites) {
    kernels += s.stats.count;
    EXPECT_EQ(s.name.find("+0x"), std::string::npos) << s.name;
    EXPECT_NE(s.name, "(no stack)");
    autograd_node |= s.name == "autograd backward: AddmmBackward0";
    // The script's line first, then the torch frame it reached.
    python_line |= s.name ==
                   "main.<locals>.step (torch_transformer_train.py:36) > Linear.forward "
                   "(torch/nn/modules/linear.py:134)";
  }
  EXPECT_EQ(kernels, r.kernel_count);
  EXPECT_TRUE(autograd_node);
  EXPECT_TRUE(python_line);
}

TEST(CallSiteTest, RealLaunchLoopIsMain) {
  const std::string path = tracesmith::testing::ExampleTracePath("launch_loop.sbt");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  AnalysisReport r = Analyze(path);
  ASSERT_EQ(r.call_sites.size(), 1u);
  EXPECT_EQ(r.call_sites[0].name, "main");
  EXPECT_EQ(r.call_sites[0].stats.count, 3000u);
}

}  // namespace
}  // namespace tracesmith::analysis
