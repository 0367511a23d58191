// What the Kineto JSON export adds to a capture so HTA reads it as a
// torch.profiler trace (kineto_derived.h, docs/export.md): ProfilerStep#N
// ranges over the detected steps, gpu_user_annotation ranges of the NVTX
// ranges on each stream, and one nonzero External id per launch shared by
// the call and its GPU ops. A hand-built capture: 5 steps, each an NVTX range
// "fwd" on a worker thread around two kernel launches (stream 7) and a copy
// (stream 8), then a third kernel launched outside it.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "testing/app_event_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith {
namespace {

using namespace model;
using json = nlohmann::json;

constexpr uint32_t kPid = 100, kWorker = 101;
constexpr int kSteps = 5;
uint64_t Base(int s) { return 1'000'000ull * (s + 1); }

struct Builder {
  Trace t;
  Builder() {
    Process p;
    p.pid = kPid;
    p.name_id = t.strings.Intern("train.py");
    t.Rows<Process>().push_back(p);
    Device d;
    d.pid = kPid;
    d.name_id = t.strings.Intern("NVIDIA H200");
    t.Rows<Device>().push_back(d);
  }
  void Range(const std::string& name, uint32_t tid, uint64_t b, uint64_t e) {
    NvtxRangeEvent r;
    r.start_ns = b;
    r.end_ns = e;
    r.pid = kPid;
    r.tid = tid;
    r.name_id = t.strings.Intern(name);
    t.Rows<NvtxRangeEvent>().push_back(r);
  }
  void Api(uint32_t corr, uint64_t b, uint64_t e, uint32_t stack_id = 0) {
    ApiEvent a;
    a.stack_id = stack_id;
    a.start_ns = b;
    a.end_ns = e;
    a.correlation_id = corr;
    a.pid = kPid;
    a.tid = kWorker;
    a.domain = kApiRuntime;
    a.cbid = 211;
    a.name_id = t.strings.Intern("cudaLaunchKernel");
    t.Rows<ApiEvent>().push_back(a);
  }
  void Kernel(const std::string& name, uint32_t corr, uint64_t b, uint64_t e) {
    KernelEvent k;
    k.start_ns = b;
    k.end_ns = e;
    k.correlation_id = corr;
    k.pid = kPid;
    k.stream_id = 7;
    k.name_id = k.demangled_id = t.strings.Intern(name);
    k.grid_x = k.grid_y = k.grid_z = k.block_x = k.block_y = k.block_z = 1;
    t.Rows<KernelEvent>().push_back(k);
  }
  void Copy(uint32_t corr, uint64_t b, uint64_t e) {
    MemcpyEvent m;
    m.start_ns = b;
    m.end_ns = e;
    m.correlation_id = corr;
    m.pid = kPid;
    m.stream_id = 8;
    m.bytes = 4096;
    m.copy_kind = kCopyHtoD;
    t.Rows<MemcpyEvent>().push_back(m);
  }
};

Trace StepTrace() {
  Builder b;
  for (int s = 0; s < kSteps; ++s) {
    const uint64_t t = Base(s);
    const uint32_t c = 10 * (s + 1);
    b.Range("fwd", kWorker, t, t + 300'000);
    b.Api(c + 1, t + 10'000, t + 20'000);
    b.Kernel("gemm", c + 1, t + 50'000, t + 100'000);
    b.Api(c + 2, t + 30'000, t + 40'000);
    b.Kernel("relu", c + 2, t + 100'000, t + 150'000);
    b.Api(c + 3, t + 50'000, t + 60'000);
    b.Copy(c + 3, t + 160'000, t + 200'000);
    b.Api(c + 4, t + 400'000, t + 410'000);
    b.Kernel("adam", c + 4, t + 420'000, t + 600'000);
  }
  return std::move(b.t);
}

json Export(const Trace& t) {
  testing::TempPath out(".json");
  auto s = exporter::ExportTrace(t, exporter::ExportFormat::kJson, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return json::parse(ReadFileToString(out.path()).value());
}

std::vector<json> Named(const json& j, std::string_view cat, std::string_view prefix) {
  std::vector<json> out;
  for (const json& e : j["traceEvents"])
    if (e.value("ph", "") == "X" && e.value("cat", "") == cat &&
        e.value("name", "").starts_with(prefix))
      out.push_back(e);
  std::sort(out.begin(), out.end(),
            [](const json& a, const json& b) { return a["ts"].get<double>() < b["ts"]; });
  return out;
}

double Us(uint64_t ns, const json& j) {
  return static_cast<double>(ns - j["baseTimeNanoseconds"].get<uint64_t>()) / 1000.0;
}

TEST(KinetoDerived, StepsOfTheKernelSequenceAreProfilerStepsOnTheLaunchingThread) {
  const json j = Export(StepTrace());
  const auto steps = Named(j, "user_annotation", "ProfilerStep#");
  ASSERT_EQ(steps.size(), size_t{kSteps});
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE(s);
    EXPECT_EQ(steps[s]["name"], "ProfilerStep#" + std::to_string(s));
    EXPECT_EQ(steps[s]["pid"], kPid);
    EXPECT_EQ(steps[s]["tid"], kWorker);
    // From its first launch to the next step's; the last to its last launch's end.
    EXPECT_DOUBLE_EQ(steps[s]["ts"].get<double>(), Us(Base(s) + 10'000, j));
    EXPECT_DOUBLE_EQ(steps[s]["dur"].get<double>(), s + 1 < kSteps ? 1000.0 : 400.0);
  }
}

// Kineto's GPU copy of each step (HTA's get_gpu_kernels_with_user_annotations,
// get_gpu_user_annotation_breakdown): per stream, the step's kernels
// launched on its thread; the copies on stream 8 are no kernels.
TEST(KinetoDerived, StepsOfTheKernelSequenceHaveGpuUserAnnotations) {
  const json j = Export(StepTrace());
  const auto gpu = Named(j, "gpu_user_annotation", "ProfilerStep#");
  ASSERT_EQ(gpu.size(), size_t{kSteps});
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE(s);
    EXPECT_EQ(gpu[s]["name"], "ProfilerStep#" + std::to_string(s));
    EXPECT_EQ(gpu[s]["pid"], 0);
    EXPECT_EQ(gpu[s]["tid"], 7);
    EXPECT_DOUBLE_EQ(gpu[s]["ts"].get<double>(), Us(Base(s) + 50'000, j));  // gemm to adam
    EXPECT_DOUBLE_EQ(gpu[s]["dur"].get<double>(), 550.0);
  }
}

TEST(KinetoDerived, ProgramStepRangesBecomeProfilerSteps) {
  Trace t = StepTrace();
  Builder b;
  for (int s = 0; s < kSteps; ++s)
    b.Range("step " + std::to_string(s + 1), kPid, Base(s), Base(s) + 900'000);
  for (const NvtxRangeEvent& r : b.t.Rows<NvtxRangeEvent>()) {
    NvtxRangeEvent copy = r;
    copy.name_id = t.strings.Intern(b.t.strings.Get(r.name_id));
    t.Rows<NvtxRangeEvent>().push_back(copy);
  }
  const json j = Export(t);
  const auto steps = Named(j, "user_annotation", "ProfilerStep#");
  ASSERT_EQ(steps.size(), size_t{kSteps});
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_EQ(steps[s]["name"], "ProfilerStep#" + std::to_string(s));
    EXPECT_EQ(steps[s]["tid"], kPid);
    EXPECT_DOUBLE_EQ(steps[s]["ts"].get<double>(), Us(Base(s), j));
    EXPECT_DOUBLE_EQ(steps[s]["dur"].get<double>(), 900.0);
  }
}

// The program's own ranges (tracesmith.range "step N"), as analyze reads them.
TEST(KinetoDerived, AppStepRangesBecomeProfilerSteps) {
  const json j = Export(testing::AppEventTrace());
  const auto steps = Named(j, "user_annotation", "ProfilerStep#");
  ASSERT_EQ(steps.size(), size_t{testing::kAppSteps});
  for (int s = 0; s < testing::kAppSteps; ++s) {
    EXPECT_EQ(steps[s]["name"], "ProfilerStep#" + std::to_string(s));
    EXPECT_EQ(steps[s]["tid"], testing::kAppTid);
    EXPECT_DOUBLE_EQ(steps[s]["ts"].get<double>(), Us(testing::AppStepBegin(s + 1), j));
    EXPECT_DOUBLE_EQ(steps[s]["dur"].get<double>(), testing::AppStepLength(s + 1) / 1000.0);
  }
}

TEST(KinetoDerived, TracesWithProfilerStepsGetNoMore) {
  Trace t = StepTrace();
  NvtxRangeEvent r = t.Rows<NvtxRangeEvent>()[0];
  r.name_id = t.strings.Intern("ProfilerStep#7");
  t.Rows<NvtxRangeEvent>().push_back(r);
  const auto steps = Named(Export(t), "user_annotation", "ProfilerStep#");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0]["name"], "ProfilerStep#7");
}

TEST(KinetoDerived, NvtxRangesSpanTheirGpuOpsOnEachStream) {
  const json j = Export(StepTrace());
  const auto cpu = Named(j, "user_annotation", "fwd");
  const auto gpu = Named(j, "gpu_user_annotation", "fwd");
  ASSERT_EQ(cpu.size(), size_t{kSteps});
  ASSERT_EQ(gpu.size(), size_t{2 * kSteps});
  std::set<uint64_t> ids;
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE(s);
    const uint64_t id = cpu[s]["args"]["External id"];
    EXPECT_NE(id, 0u);
    ids.insert(id);
    // Kernels on stream 7 (launched inside), the copy on stream 8; not "adam".
    const json& k = gpu[2 * s];
    const json& c = gpu[2 * s + 1];
    EXPECT_EQ(k["name"], "fwd");
    EXPECT_EQ(k["pid"], 0);
    EXPECT_EQ(k["tid"], 7);
    EXPECT_DOUBLE_EQ(k["ts"].get<double>(), Us(Base(s) + 50'000, j));
    EXPECT_DOUBLE_EQ(k["dur"].get<double>(), 100.0);
    EXPECT_EQ(k["args"]["External id"], id);
    EXPECT_EQ(c["tid"], 8);
    EXPECT_DOUBLE_EQ(c["ts"].get<double>(), Us(Base(s) + 160'000, j));
    EXPECT_DOUBLE_EQ(c["dur"].get<double>(), 40.0);
    EXPECT_EQ(c["args"]["External id"], id);
  }
  EXPECT_EQ(ids.size(), size_t{kSteps});
}

// An enclosing range spans the ops of every range inside it, and those
// launched between them.
TEST(KinetoDerived, NestedRangesEachSpanTheirOps) {
  Trace t = StepTrace();
  NvtxRangeEvent outer = t.Rows<NvtxRangeEvent>()[0];
  outer.start_ns = Base(0) - 1000;
  outer.end_ns = Base(kSteps);
  outer.name_id = t.strings.Intern("epoch");
  t.Rows<NvtxRangeEvent>().push_back(outer);
  const json j = Export(t);
  const auto epoch = Named(j, "gpu_user_annotation", "epoch");
  ASSERT_EQ(epoch.size(), 2u);
  EXPECT_EQ(epoch[0]["tid"], 7);  // the first gemm to the last adam
  EXPECT_DOUBLE_EQ(epoch[0]["ts"].get<double>(), Us(Base(0) + 50'000, j));
  EXPECT_DOUBLE_EQ(epoch[0]["dur"].get<double>(), (Base(kSteps - 1) + 550'000 - Base(0)) / 1000.0);
  EXPECT_EQ(epoch[1]["tid"], 8);
  EXPECT_EQ(Named(j, "gpu_user_annotation", "fwd").size(), size_t{2 * kSteps});
}

TEST(KinetoDerived, EachLaunchAndItsGpuOpShareANonzeroExternalId) {
  const json j = Export(StepTrace());
  std::map<uint64_t, uint64_t> call_id, op_id;  // correlation -> External id
  for (const json& e : j["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat == "cuda_runtime") call_id[e["args"]["correlation"]] = e["args"]["External id"];
    if (cat == "kernel" || cat == "gpu_memcpy")
      op_id[e["args"]["correlation"]] = e["args"]["External id"];
  }
  ASSERT_EQ(call_id.size(), size_t{4 * kSteps});
  EXPECT_EQ(call_id, op_id);
  std::set<uint64_t> distinct;
  for (const auto& [corr, id] : call_id) {
    EXPECT_NE(id, 0u) << corr;
    distinct.insert(id);
  }
  EXPECT_EQ(distinct.size(), call_id.size());
}

TEST(KinetoDerived, FrameworkExternalIdsAreKeptAndDerivedOnesAvoidThem) {
  Trace t = StepTrace();
  t.Rows<ApiEvent>()[0].external_id = 5;
  const json j = Export(t);
  std::map<uint64_t, uint64_t> ids;  // correlation -> External id of its kernel
  for (const json& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel") ids[e["args"]["correlation"]] = e["args"]["External id"];
  EXPECT_EQ(ids[11], 5u);
  for (const auto& [corr, id] : ids)
    if (corr != 11) {
      EXPECT_GT(id, 5u);
    }
}

// Launch-time stacks on one thread: <module> > train > fwd (two calls, from
// two lines of train and fwd), <module> > train > bwd, then <module> > eval;
// each with a native frame at the leaf (left out: the stacks have Python frames).
TEST(KinetoDerived, LaunchStacksBecomeNestedPythonFunctions) {
  Builder b;
  StackBuilder stacks(&b.t);
  auto py = [&](const char* file, const char* function, uint32_t line) {
    Frame f;
    f.kind = kFramePython;
    f.file_id = b.t.strings.Intern(file);
    f.function_id = b.t.strings.Intern(function);
    f.line = line;
    return stacks.InternFrame(f);
  };
  Frame native;
  native.kind = kFrameNative;
  native.function_id = b.t.strings.Intern("cudaLaunchKernel");
  const uint32_t leaf = stacks.InternFrame(native);
  auto stack = [&](std::vector<uint32_t> root_first) {
    std::vector<uint32_t> leaf_first = {leaf};
    leaf_first.insert(leaf_first.end(), root_first.rbegin(), root_first.rend());
    return stacks.InternStack(leaf_first);
  };
  const uint32_t module10 = py("main.py", "<module>", 10), module12 = py("main.py", "<module>", 12);
  const uint32_t calls[] = {
      stack({module10, py("main.py", "train", 5), py("model.py", "fwd", 3)}),
      stack({module10, py("main.py", "train", 6), py("model.py", "fwd", 4)}),
      stack({module10, py("main.py", "train", 7), py("model.py", "bwd", 20)}),
      stack({module12, py("main.py", "eval", 31)}),
  };
  for (uint32_t i = 0; i < 4; ++i) b.Api(i + 1, Base(i), Base(i) + 1000, calls[i]);
  const json j = Export(b.t);
  std::map<std::string, json> by_name;
  for (const json& e : Named(j, "python_function", "")) {
    EXPECT_EQ(e["pid"], kPid);
    EXPECT_EQ(e["tid"], kWorker);
    EXPECT_EQ(e["args"]["Python thread"], 0);
    by_name[e["name"]] = e;
  }
  const std::pair<const char*, std::pair<int, int>> want[] = {{"main.py(10): <module>", {0, 3}},
                                                              {"main.py(5): train", {0, 2}},
                                                              {"model.py(3): fwd", {0, 1}},
                                                              {"model.py(20): bwd", {2, 2}},
                                                              {"main.py(31): eval", {3, 3}}};
  ASSERT_EQ(by_name.size(), std::size(want));
  for (const auto& [name, calls_spanned] : want) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(by_name.count(name));
    const json& e = by_name[name];
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), Us(Base(calls_spanned.first), j));
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(),
                     (Base(calls_spanned.second) + 1000 - Base(calls_spanned.first)) / 1000.0);
  }
  const auto id = [&](const char* name) { return by_name[name]["args"]["Python id"]; };
  EXPECT_FALSE(by_name["main.py(10): <module>"]["args"].contains("Python parent id"));
  EXPECT_EQ(by_name["main.py(5): train"]["args"]["Python parent id"], id("main.py(10): <module>"));
  EXPECT_EQ(by_name["model.py(3): fwd"]["args"]["Python parent id"], id("main.py(5): train"));
  EXPECT_EQ(by_name["model.py(20): bwd"]["args"]["Python parent id"], id("main.py(5): train"));
  EXPECT_EQ(by_name["main.py(31): eval"]["args"]["Python parent id"], id("main.py(10): <module>"));
}

}  // namespace
}  // namespace tracesmith
