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

}  // namespace
}  // namespace tracesmith::capture
