// GPU tests for host call stacks (issue #4): every launch carries the stack
// of the code that made it, native (C++ programs) and mixed (PyTorch).
// Without a GPU every test prints "skipped (no GPU)".
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "capture/gpu_profile.h"
#include "capture/trace_checks.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/symbolize/symbolizer.h"

namespace tracesmith::capture {
namespace {

using testing::Str;

using testing::Describe;

TEST(GpuStacks, LaunchLoopEveryKernelHasAStackEndingInMain) {
  REQUIRE_GPU();
  ProfileRun r =
      Profile("stacks_launch_loop", Program("launch_loop") + " 200000", "--stacks native");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  // `profile` names native frames when the program ends (--no-symbolize: not).
  uint64_t native = 0, named_by_profile = 0;
  for (const model::Frame& f : r.trace.Rows<model::Frame>())
    if (f.kind == model::kFrameNative) ++native, named_by_profile += f.function_id != 0;
  auto st = symbolize::Symbolize(&r.trace);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  auto kernels = testing::KernelsNamed(r.trace, "tiny");
  ASSERT_EQ(kernels.size(), 201000u);  // 1000 warm-up + 200,000 timed
  size_t with_stack = 0, ending_in_main = 0;
  std::map<uint32_t, bool> checked;  // stack id -> has main, outer frames only in libc
  for (const auto& k : kernels) {
    if (k.stack_id == 0) continue;
    ++with_stack;
    auto it = checked.find(k.stack_id);
    if (it == checked.end()) {
      std::vector<std::string> frames = Describe(r.trace, k.stack_id);
      size_t main_at = frames.size();
      for (size_t i = 0; i < frames.size(); ++i)
        if (frames[i] == "main") main_at = i;
      bool ok = main_at < frames.size();
      for (size_t i = main_at + 1; ok && i < frames.size(); ++i)
        // Below main: libc's start-up (__libc_start_call_main is a local
        // symbol, absent from a stripped libc: "?").
        ok = frames[i].find("libc_start") != std::string::npos || frames[i] == "_start" ||
             frames[i] == "?";
      it = checked.emplace(k.stack_id, ok).first;
      std::printf("stack %u (%s):", k.stack_id, ok ? "ends in main" : "BAD");
      for (const auto& f : frames) std::printf(" <- %s", f.c_str());
      std::printf("\n");
    }
    ending_in_main += it->second;
  }
  std::printf(
      "GPU-CHECK stacks launch_loop: kernels=%zu with_stack=%zu ending_in_main=%zu "
      "distinct_stacks=%zu named_by_profile=%llu/%llu named_after_symbolize=%llu\n",
      kernels.size(), with_stack, ending_in_main, checked.size(),
      static_cast<unsigned long long>(named_by_profile), static_cast<unsigned long long>(native),
      static_cast<unsigned long long>(named_by_profile + st->with_function));
  EXPECT_GT(named_by_profile, 0u);
  EXPECT_EQ(with_stack, kernels.size());
  EXPECT_EQ(ending_in_main, kernels.size());
}

// The line of the training script that calls model(x) (1-based).
int ModelCallLine(const std::string& script) {
  std::ifstream in(script);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find("model(x)") != std::string::npos) return n;
  return -1;
}

TEST(GpuStacks, TorchStepKernelsCarryPythonStacks) {
  REQUIRE_GPU();
  std::string py = Env("TS_TORCH_WORKLOAD");
  if (py.empty()) GTEST_SKIP() << "skipped (TS_TORCH_WORKLOAD not set)";
  int model_line = ModelCallLine(py);
  ASSERT_GT(model_line, 0);
  ProfileRun r = Profile("stacks_torch", "python3 " + py + " --steps 10");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  auto kernels = r.trace.Rows<model::KernelEvent>();
  std::sort(kernels.begin(), kernels.end(),
            [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  size_t with_stack = 0;
  for (const auto& k : kernels) with_stack += k.stack_id != 0;
  // The first GEMM kernel launched from Linear.forward: the first layer's
  // (cuBLAS may launch helpers such as scal_kernel from there too).
  const std::regex gemm_name("gemm|nvjet|xmma|cutlass", std::regex::icase);
  const model::KernelEvent* gemm = nullptr;
  std::vector<std::string> gemm_frames;
  std::string from_linear;
  for (const auto& k : kernels) {
    if (k.stack_id == 0) continue;
    std::vector<std::string> frames = Describe(r.trace, k.stack_id);
    bool in_linear = false;
    for (const auto& f : frames)
      in_linear |=
          f.find("forward ") != std::string::npos && f.find("/linear.py:") != std::string::npos;
    if (!in_linear) continue;
    std::string name(Str(r.trace, k.name_id));
    if (!std::regex_search(name, gemm_name)) {
      if (from_linear.size() < 2000) from_linear += "\n  " + name;
      continue;
    }
    gemm = &k;
    gemm_frames = frames;
    break;
  }
  ASSERT_NE(gemm, nullptr) << "no GEMM kernel was launched from torch/nn/modules/linear.py "
                              "forward; other kernels from there:"
                           << from_linear;
  std::string want = "torch_mlp_train.py:" + std::to_string(model_line);
  bool has_model_line = false;
  std::printf("first Linear.forward kernel %s stack:",
              std::string(Str(r.trace, gemm->name_id)).c_str());
  for (const auto& f : gemm_frames) {
    std::printf("\n    %s", f.c_str());
    if (f.size() >= want.size() && f.compare(f.size() - want.size(), want.size(), want) == 0)
      has_model_line = true;
  }
  std::printf(
      "\nGPU-CHECK stacks torch: kernels=%zu with_stack=%zu (%.3f%%) gemm_has_model_line=%d\n",
      kernels.size(), with_stack, 100.0 * double(with_stack) / double(kernels.size()),
      has_model_line);
  EXPECT_GE(double(with_stack), 0.999 * double(kernels.size()));
  EXPECT_TRUE(has_model_line) << "expected a Python frame at " << want;
}

// Kernels replayed from a CUDA graph carry the stack of the launch that put
// them in the graph (issue #41 item 1): gpu/programs/cuda_graph.cu records 3
// launches in capture_steps and replays the graph 4 times from main. The
// GraphNode rows say which node each executable node was cloned from and
// with which stack the 3 nodes were made; `analyze` names capture_steps.
TEST(GpuStacks, GraphKernelsAreNamedByTheFunctionThatCapturedThem) {
  REQUIRE_GPU();
  ProfileRun r = Profile("stacks_graph", Program("cuda_graph") + " 4", "--stacks native");
  ASSERT_EQ(r.exit_code(), 0) << r.output;
  auto st = symbolize::Symbolize(&r.trace);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> origin;  // node -> (cloned from, stack)
  size_t made = 0, cloned = 0;
  size_t made_in_capture = 0;
  for (const model::GraphNode& n : r.trace.Rows<model::GraphNode>()) {
    auto& o = origin[n.graph_node_id];
    if (n.origin_node_id || !o.first) o = {n.origin_node_id, n.stack_id};  // a clone's row wins
    made += n.origin_node_id == 0;
    cloned += n.origin_node_id != 0;
    std::printf("graph node %llu: from %llu, stack", (unsigned long long)n.graph_node_id,
                (unsigned long long)n.origin_node_id);
    bool capture = false;
    for (const auto& f : Describe(r.trace, n.stack_id)) {
      std::printf(" <- %s", f.c_str());
      capture |= f.find("capture_steps") == 0;
    }
    std::printf("\n");
    made_in_capture += capture;
  }
  auto kernels = testing::KernelsNamed(r.trace, "graph_step");
  ASSERT_EQ(kernels.size(), 12u);
  size_t in_capture = 0, launch_in_main = 0;
  std::set<uint64_t> nodes;
  for (const auto& k : kernels) {
    nodes.insert(k.graph_node_id);
    uint64_t node = k.graph_node_id;
    uint32_t stack = 0;
    for (int step = 0; step < 8 && origin.count(node); ++step) {
      auto [from, s] = origin[node];
      if (!from) {
        stack = s;
        break;
      }
      node = from;
    }
    bool capture = false, main = false;
    for (const auto& f : Describe(r.trace, stack)) capture |= f.find("capture_steps") == 0;
    for (const auto& f : Describe(r.trace, k.stack_id)) main |= f == "main";
    in_capture += capture;
    launch_in_main += main;
  }
  // What `analyze` names: every graph_step kernel's call site is capture_steps.
  const std::string json = r.trace_path + ".analyze.json";
  const std::string cmd = Env("TS_TRACESMITH") + " analyze --json " + r.trace_path + " > " + json;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex site(R"re("call_sites":\s*\[\s*\{\s*"name":\s*"([^"]*)")re");
  std::smatch top;
  const bool has_top = std::regex_search(text, top, site);
  std::printf(
      "GPU-CHECK stacks graph: graph_kernels=%zu nodes=%zu node_rows_made=%zu "
      "node_rows_cloned=%zu made_in_capture_steps=%zu kernels_from_capture_steps=%zu "
      "launches_in_main=%zu "
      "analyze_top_site=%s\n",
      kernels.size(), nodes.size(), made, cloned, made_in_capture, in_capture, launch_in_main,
      has_top ? top[1].str().c_str() : "(none)");
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(made, 3u);  // not cudaGraphInstantiate's own nodes
  EXPECT_EQ(made_in_capture, 3u);
  EXPECT_GE(cloned, 3u);
  EXPECT_EQ(in_capture, 12u);
  EXPECT_EQ(launch_in_main, 12u);
  ASSERT_TRUE(has_top) << text.substr(0, 2000);
  EXPECT_EQ(top[1].str().find("capture_steps"), 0u) << top[1].str();
}

}  // namespace
}  // namespace tracesmith::capture
