// torch.profiler's cpu_op slices of a PyTorch capture, rebuilt from the
// launch-time stacks for the Kineto JSON export (python_stacks.h,
// docs/export.md "Call stacks"): HTA's aten-op delay, frequent kernel
// sequences and critical path read them. A hand-built capture of one
// process: on the main thread two nn.Linear calls from two lines of
// model.py (each aten::linear > aten::addmm, the second launching two
// kernels), then an optimizer foreach op under torch.optim's step hook; on
// the autograd thread (native frames only) AddmmBackward0 > aten::mm.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "export/python_stacks.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith {
namespace kineto_torch_ops_test {  // unity builds: its own names
namespace {

using namespace model;
using json = nlohmann::json;

constexpr uint32_t kPid = 100, kMain = 100, kAutograd = 140;

struct Builder {
  Trace t;
  StackBuilder stacks{&t};
  uint32_t corr = 0;
  Builder() {
    Process p;
    p.pid = kPid;
    p.name_id = t.strings.Intern("python3");
    t.Rows<Process>().push_back(p);
    Device d;
    d.pid = kPid;
    d.name_id = t.strings.Intern("NVIDIA H200");
    t.Rows<Device>().push_back(d);
  }
  uint32_t Py(const char* function, uint32_t line) {
    Frame f;
    f.kind = kFramePython;
    f.file_id = t.strings.Intern("model.py");
    f.function_id = t.strings.Intern(function);
    f.line = line;
    return stacks.InternFrame(f);
  }
  uint32_t Native(const std::string& function, uint64_t pc) {
    Frame f;
    f.kind = kFrameNative;
    f.function_id = t.strings.Intern(function);
    f.rel_pc = pc;
    return stacks.InternFrame(f);
  }
  uint32_t Stack(const std::vector<uint32_t>& root_first) {
    const std::vector<uint32_t> leaf_first(root_first.rbegin(), root_first.rend());
    return stacks.InternStack(leaf_first);
  }
  // A launch on `tid` at [b, b + 1 us) with its kernel 5 us later.
  void Launch(uint32_t tid, uint64_t b, uint32_t stack) {
    ApiEvent a;
    a.stack_id = stack;
    a.start_ns = b;
    a.end_ns = b + 1000;
    a.correlation_id = ++corr;
    a.pid = kPid;
    a.tid = tid;
    a.domain = kApiRuntime;
    a.cbid = 211;
    a.name_id = t.strings.Intern("cudaLaunchKernel");
    t.Rows<ApiEvent>().push_back(a);
    KernelEvent k;
    k.start_ns = b + 5000;
    k.end_ns = b + 6000;
    k.correlation_id = corr;
    k.pid = kPid;
    k.stream_id = 7;
    k.name_id = k.demangled_id = t.strings.Intern("kernel" + std::to_string(corr));
    k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
    t.Rows<KernelEvent>().push_back(k);
  }
};

constexpr uint64_t kT0 = 1'000'000'000;

Trace TorchTrace() {
  Builder b;
  const uint32_t launch = b.Native("cudaLaunchKernel", 0x10);
  const uint32_t linear = b.Native(
      "at::_ops::linear::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> "
      "const&)",
      0x20);
  // The autocast wrapper names linear but is no dispatcher entry.
  const uint32_t autocast = b.Native(
      "at::autocast::WrapFunction_<(at::autocast::CastPolicy)0, &at::_ops::linear::call>::call("
      "at::Tensor const&)",
      0x28);
  const uint32_t addmm = b.Native(
      "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::Scalar "
      "const&, c10::Scalar const&)",
      0x30);
  const uint32_t addmm_impl = b.Native("at::native::addmm_out_cuda_impl(at::Tensor&)", 0x38);
  const uint32_t foreach = b.Native("at::_ops::_foreach_add__Scalar::call(c10::ArrayRef)", 0x40);
  const uint32_t backward = b.Native(
      "torch::autograd::generated::AddmmBackward0::apply(std::vector<at::Tensor>&&)", 0x50);
  const uint32_t mm = b.Native("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", 0x60);
  const uint32_t step = b.Py("step", 10), opt = b.Py("opt_step", 50);
  const uint32_t hook = b.Py("Optimizer.profile_hook_step.<locals>.wrapper", 533);
  const uint32_t adam = b.Py("Adam.step", 248);
  const uint32_t fwd3 = b.Py("forward", 3), fwd4 = b.Py("forward", 4);
  // Main thread: linear from line 3 (one kernel), linear from line 4 (two
  // kernels: addmm's and one under linear only), the optimizer op (two).
  b.Launch(kMain, kT0, b.Stack({step, fwd3, linear, autocast, linear, addmm, addmm_impl, launch}));
  b.Launch(kMain, kT0 + 10'000,
           b.Stack({step, fwd4, linear, autocast, linear, addmm, addmm_impl, launch}));
  b.Launch(kMain, kT0 + 20'000, b.Stack({step, fwd4, linear, autocast, linear, launch}));
  b.Launch(kMain, kT0 + 30'000, b.Stack({opt, hook, adam, foreach, launch}));
  b.Launch(kMain, kT0 + 40'000, b.Stack({opt, hook, adam, foreach, launch}));
  // Autograd thread: native frames only.
  b.Launch(kAutograd, kT0 + 15'000, b.Stack({backward, mm, launch}));
  return std::move(b.t);
}

json Export(const Trace& t) {
  testing::TempPath out(".json");
  auto s = exporter::ExportTrace(t, exporter::ExportFormat::kJson, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return json::parse(ReadFileToString(out.path()).value());
}

struct Slice {
  std::string name;
  uint64_t tid;
  double ts, dur;
};

std::vector<Slice> Slices(const json& j, std::string_view cat) {
  std::vector<Slice> out;
  for (const json& e : j["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") == cat)
      out.push_back({e["name"], e["tid"], e["ts"], e["dur"]});
  std::sort(out.begin(), out.end(), [](const Slice& a, const Slice& b) {
    return std::tuple(a.ts, -a.dur, a.name) < std::tuple(b.ts, -b.dur, b.name);
  });
  return out;
}

TEST(KinetoTorchOps, DispatcherEntriesAndBackwardNodesAreCpuOps) {
  const json j = Export(TorchTrace());
  const double t0 = (kT0 - j["baseTimeNanoseconds"].get<uint64_t>()) / 1000.0;
  // (name, tid, start and end in us from kT0): one slice per op call; the
  // dispatcher is entered twice for linear under autocast, as torch records.
  const std::vector<std::tuple<std::string, uint64_t, double, double>> want = {
      {"aten::addmm", kMain, 0, 1},
      {"aten::linear", kMain, 0, 1},
      {"aten::linear", kMain, 0, 1},
      {"aten::linear", kMain, 10, 21},  // line 4: its own slice, both its launches
      {"aten::linear", kMain, 10, 21},
      {"aten::addmm", kMain, 10, 11},
      {"aten::mm", kAutograd, 15, 16},
      {"autograd::engine::evaluate_function: AddmmBackward0", kAutograd, 15, 16},
      {"aten::_foreach_add_", kMain, 30, 41},
  };
  const std::vector<Slice> got = Slices(j, "cpu_op");
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const auto& [name, tid, b, e] = want[i];
    SCOPED_TRACE(name + " #" + std::to_string(i));
    EXPECT_EQ(got[i].name, name);
    EXPECT_EQ(got[i].tid, tid);
    EXPECT_NEAR(got[i].ts - t0, b, 1e-6);
    EXPECT_NEAR(got[i].ts - t0 + got[i].dur, e, 1e-6);
  }
  // torch.optim's step hook: its record_function, named by the class that
  // defines step, around the step's launches.
  const std::vector<Slice> steps = Slices(j, "user_annotation");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].name, "Optimizer.step#Adam.step");
  EXPECT_NEAR(steps[0].ts - t0, 30, 1e-6);
  EXPECT_NEAR(steps[0].dur, 11, 1e-6);
  // Its GPU copy (Kineto's gpu_user_annotation): its two kernels, with its External id.
  const std::vector<Slice> gpu = Slices(j, "gpu_user_annotation");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0].name, "Optimizer.step#Adam.step");
  EXPECT_EQ(gpu[0].tid, 7u);
  EXPECT_NEAR(gpu[0].ts - t0, 35, 1e-6);
  EXPECT_NEAR(gpu[0].dur, 11, 1e-6);
  uint64_t host_id = 0, gpu_id = 1;
  for (const json& e : j["traceEvents"]) {
    if (e.value("cat", "") == "user_annotation") host_id = e["args"]["External id"];
    if (e.value("cat", "") == "gpu_user_annotation") gpu_id = e["args"]["External id"];
  }
  EXPECT_EQ(host_id, gpu_id);
  // Each has an External id of its own (HTA's overlay reads every op's args).
  std::set<uint64_t> ids;
  for (const json& e : j["traceEvents"])
    if (e.value("cat", "") == "cpu_op" || e.value("cat", "") == "user_annotation")
      ids.insert(e["args"]["External id"].get<uint64_t>());
  EXPECT_EQ(ids.size(), want.size() + 1);
  EXPECT_EQ(ids.count(0), 0u);
}

// torch's names: the operator without its overload, the backward node with
// the engine's prefix; frames of no dispatcher entry or node have none.
TEST(KinetoTorchOps, TorchNamesOfNativeFrames) {
  using exporter::TorchOpName;
  const std::pair<const char*, const char*> cases[] = {
      {"at::_ops::linear::call(at::Tensor const&)", "aten::linear"},
      {"at::_ops::add__Tensor::call(at::Tensor&)", "aten::add_"},
      {"at::_ops::add_Tensor::call(at::Tensor const&)", "aten::add"},
      {"at::_ops::_foreach_addcdiv__ScalarList::call(c10::ArrayRef)", "aten::_foreach_addcdiv_"},
      {"at::_ops::sum_dim_IntList::call(at::Tensor const&)", "aten::sum"},
      {"at::_ops::to_dtype::call(at::Tensor const&)", "aten::to"},
      {"at::_ops::to_dtype_layout::call(at::Tensor const&)", "aten::to"},
      {"at::_ops::log_softmax_int::call(at::Tensor const&)", "aten::log_softmax"},
      {"at::_ops::_to_copy::call(at::Tensor const&)", "aten::_to_copy"},
      {"at::_ops::mm_out::call(at::Tensor const&)", "aten::mm"},
      {"at::_ops::empty_memory_format::call(c10::ArrayRef)", "aten::empty"},
      {"at::_ops::arange_start::call(c10::Scalar const&)", "aten::arange"},
      {"at::_ops::arange_start_step::call(c10::Scalar const&)", "aten::arange"},
      {"at::_ops::arange_start_out::call(c10::Scalar const&)", "aten::arange"},
      {"at::_ops::_cast_Int::call(at::Tensor const&, bool)", "aten::_cast_Int"},
      {"at::_ops::random__from::call(at::Tensor&, long)", "aten::random_"},
      {"at::_ops::randint_low::call(long, long)", "aten::randint"},
      {"at::_ops::__and___Tensor::call(at::Tensor const&)", "aten::__and__"},
      {"at::_ops::_cast_Int_out::call(at::Tensor const&, bool)", "aten::_cast_Int"},
      {"torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)",
       "autograd::engine::evaluate_function: MmBackward0"},
      {"torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)",
       "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"},
      {"at::_ops::linear::redispatch(c10::DispatchKeySet)", ""},
      {"at::_ops::mm::call", ""},  // no parameter list: not the function
      {"at::autocast::WrapFunction_<&at::_ops::linear::call>::call(at::Tensor const&)", ""},
      {"torch::autograd::generated::MmBackward0_apply_functional(at::Tensor)", ""},
      {"torch::autograd::generated::details::f::apply(int)", ""},
      {"cudaLaunchKernel", ""},
  };
  for (const auto& [function, name] : cases) EXPECT_EQ(TorchOpName(function), name) << function;
}

// python_function slices are Python frames only in a Python program: the
// autograd thread's native frames (down to "cudaLaunchKernel", which HTA
// takes for a launch by its name) are none.
TEST(KinetoTorchOps, NativeOnlyStacksOfAPythonProgramHaveNoPythonFunctions) {
  const json j = Export(TorchTrace());
  std::map<std::string, int> names;
  for (const Slice& s : Slices(j, "python_function")) {
    EXPECT_EQ(s.tid, kMain) << s.name;
    ++names[s.name];
  }
  EXPECT_EQ(names, (std::map<std::string, int>{
                       {"model.py(10): step", 1},
                       {"model.py(3): forward", 1},
                       {"model.py(50): opt_step", 1},
                       {"model.py(533): Optimizer.profile_hook_step.<locals>.wrapper", 1},
                       {"model.py(248): Adam.step", 1}}));
}

// A C++ program (no Python frame anywhere) keeps its native frames.
TEST(KinetoTorchOps, ACppProgramKeepsNativeFrames) {
  Builder b;
  b.Launch(kMain, kT0, b.Stack({b.Native("main", 0x1), b.Native("Run()", 0x2)}));
  const json j = Export(b.t);
  const std::vector<Slice> got = Slices(j, "python_function");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "Run()");  // one span: by name
  EXPECT_EQ(got[1].name, "main");
  EXPECT_TRUE(Slices(j, "cpu_op").empty());
}

}  // namespace
}  // namespace kineto_torch_ops_test
}  // namespace tracesmith
