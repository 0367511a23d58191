// Our Chrome/Kineto JSON against a real torch.profiler trace
// (tests/export/data/torch_profiler_mlp.json.gz: torch 2.11, NVIDIA H200,
// 5 MLP training steps, `prof.export_chrome_trace`): for every event class
// both files hold, the same top-level keys, at least torch's args keys, and
// the same JSON type for every key. Also: the torch trace imports (kernel
// count equal to its "kernel" events) and survives JSON -> SBT file -> JSON.
//
// Deliberate differences (docs/export.md, "Chrome / Kineto JSON"):
// - Captured NVTX ranges (user_annotation) have only "External id" in
//   "args"; ranges of an imported torch trace keep torch's
//   (json_parity_test.cc compares them). What a capture gets that torch's
//   trace has otherwise (ProfilerStep#N, gpu_user_annotation, launch
//   External ids, python_function): kineto_derived_test.cc.
// - "memory bandwidth (GB/s)" is the string "N/A" for a zero-length copy,
//   as Kineto writes it (the fixture has none).
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/import/import.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using namespace model;
using exporter::ExportFormat;
using json = nlohmann::json;
using testing::TempPath;

std::string SourceDir() {
  const char* d = std::getenv("TS_SOURCE_DIR");
  return d ? d : ".";
}
std::string TorchTracePath() {
  return SourceDir() + "/tests/export/data/torch_profiler_mlp.json.gz";
}

std::string ReadGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::string text;
  if (f == nullptr) return text;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return text;
}

const json& TorchTrace() {
  static const json j = json::parse(ReadGzip(TorchTracePath()));
  return j;
}

std::string ExportJson(const Trace& t) {
  TempPath out(".json");
  auto s = exporter::ExportTrace(t, ExportFormat::kJson, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto text = ReadFileToString(out.path());
  return text.ok() ? *text : std::string();
}

// JSON type names; arrays carry their element types ("array<int>").
std::string TypeOf(const json& v) {
  if (v.is_boolean()) return "bool";
  if (v.is_number_integer()) return "int";  // signed or unsigned
  if (v.is_number_float()) return "float";
  if (v.is_string()) return "string";
  if (v.is_null()) return "null";
  if (v.is_object()) return "object";
  std::set<std::string> inner;
  for (const auto& x : v) inner.insert(TypeOf(x));
  std::string t = "array<";
  for (const auto& i : inner) t += (t.back() == '<' ? "" : "|") + i;
  return t + ">";
}

// Per event class: the keys seen and the types seen per key, for the event
// itself and for its args.
struct ClassSchema {
  std::map<std::string, std::set<std::string>> keys, args;
  size_t events = 0;
};
using Schema = std::map<std::string, ClassSchema>;

// "X kernel", "s ac2g", "M process_name", "i Record Window End".
std::string ClassOf(const json& e) {
  std::string ph = e.value("ph", "");
  if (ph == "M" || ph == "i" || !e.contains("cat")) return ph + " " + e.value("name", "");
  return ph + " " + e["cat"].get<std::string>();
}

void AddSchema(const json& trace, Schema* schema) {
  for (const auto& e : trace["traceEvents"]) {
    ClassSchema& c = (*schema)[ClassOf(e)];
    ++c.events;
    for (auto it = e.begin(); it != e.end(); ++it) c.keys[it.key()].insert(TypeOf(*it));
    if (e.contains("args") && e["args"].is_object())
      for (auto it = e["args"].begin(); it != e["args"].end(); ++it)
        c.args[it.key()].insert(TypeOf(*it));
  }
}

std::set<std::string> KeySet(const std::map<std::string, std::set<std::string>>& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

// Ours: the real capture in examples/ (kernels, copies, memsets, syncs,
// runtime and driver calls, memory, overhead), a synthetic trace with NVTX
// and external ids, and the torch trace itself imported (cpu ops,
// annotations, gpu_user_annotation, overhead).
Schema OurSchema() {
  Schema s;
  auto capture = format::ReadTraceFile(SourceDir() + "/examples/traces/mlp_train.sbt");
  EXPECT_TRUE(capture.ok()) << capture.status().ToString();
  if (capture.ok()) AddSchema(json::parse(ExportJson(*capture)), &s);

  SyntheticOptions o;
  o.kernels = 500;
  o.memcpy_every = 10;
  o.sync_every = 50;
  o.nvtx_every = 25;
  Trace synthetic = MakeSyntheticTrace(o);
  for (auto& a : synthetic.Rows<ApiEvent>()) a.external_id = a.correlation_id + 1000;
  // Whole-number doubles must still be written as floats ("2.0"): a grid
  // of exactly 2 blocks per SM, a copy at exactly 1 GB/s.
  KernelEvent& k = synthetic.Rows<KernelEvent>().front();
  for (const Device& d : synthetic.Rows<Device>())
    if (d.device_id == k.device_id) k.grid_x = 2 * d.sm_count;
  k.grid_y = k.grid_z = 1;
  MemcpyEvent& m = synthetic.Rows<MemcpyEvent>().front();
  m.bytes = m.end_ns - m.start_ns;
  AddSchema(json::parse(ExportJson(synthetic)), &s);

  auto imported = importer::ImportFile(TorchTracePath());
  EXPECT_TRUE(imported.ok()) << imported.status().ToString();
  if (imported.ok()) AddSchema(json::parse(ExportJson(*imported)), &s);
  return s;
}

TEST(JsonSchema, TopLevelKeysAndDevicePropertiesMatchTorch) {
  const json& torch = TorchTrace();
  auto imported = importer::ImportFile(TorchTracePath());
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  json ours = json::parse(ExportJson(*imported));
  for (auto it = torch.begin(); it != torch.end(); ++it) {
    SCOPED_TRACE(it.key());
    ASSERT_TRUE(ours.contains(it.key()));
    EXPECT_EQ(TypeOf(ours[it.key()]), TypeOf(*it));
  }
  // Kineto's trace_id: 32 upper-case hex digits.
  EXPECT_EQ(ours["trace_id"].get<std::string>().size(), 32u);
  EXPECT_EQ(ours["trace_id"].get<std::string>().find_first_not_of("0123456789ABCDEF"),
            std::string::npos);
  EXPECT_EQ(ours["schemaVersion"], torch["schemaVersion"]);
  EXPECT_EQ(ours["displayTimeUnit"], torch["displayTimeUnit"]);
  EXPECT_EQ(ours["cupti_version"], torch["cupti_version"]);
  EXPECT_EQ(ours["cuda_driver_version"], torch["cuda_driver_version"]);
  EXPECT_EQ(ours["cuda_runtime_version"], torch["cuda_runtime_version"]);

  ASSERT_EQ(ours["deviceProperties"].size(), torch["deviceProperties"].size());
  const json& td = torch["deviceProperties"][0];
  const json& od = ours["deviceProperties"][0];
  for (auto it = td.begin(); it != td.end(); ++it) {
    SCOPED_TRACE(it.key());
    ASSERT_TRUE(od.contains(it.key()));
    EXPECT_EQ(TypeOf(od[it.key()]), TypeOf(*it));
    // Fields the importer keeps, and those from the per-architecture table,
    // come back with torch's values (H200, sm_90).
    EXPECT_EQ(od[it.key()], *it);
  }
  std::set<std::string> ok, tk;
  for (auto it = od.begin(); it != od.end(); ++it) ok.insert(it.key());
  for (auto it = td.begin(); it != td.end(); ++it) tk.insert(it.key());
  EXPECT_EQ(ok, tk);
}

TEST(JsonSchema, EventKeysArgsAndTypesMatchTorch) {
  Schema torch;
  AddSchema(TorchTrace(), &torch);
  Schema ours = OurSchema();
  // Classes torch writes that we must write too (the rest of torch's are
  // CPU-op side: cpu_op, fwdbwd flows, Trace spans, iteration markers; they
  // come back only from an imported torch trace).
  for (const char* required :
       {"X kernel", "X gpu_memcpy", "X gpu_memset", "X cuda_runtime", "X cuda_driver", "s ac2g",
        "f ac2g", "X gpu_user_annotation", "X user_annotation", "X overhead", "M process_name",
        "M process_labels", "M process_sort_index", "M thread_name", "M thread_sort_index",
        "i Record Window End"})
    EXPECT_TRUE(ours.count(required) && torch.count(required)) << required;

  // NVTX-range classes: no args (see the file comment).
  const std::set<std::string> no_args = {"X python_function"};
  size_t compared = 0;
  for (const auto& [cls, t] : torch) {
    auto o = ours.find(cls);
    if (o == ours.end()) continue;
    ++compared;
    SCOPED_TRACE(cls);
    std::set<std::string> want = KeySet(t.keys);
    if (no_args.count(cls)) want.erase("args");
    EXPECT_EQ(KeySet(o->second.keys), want);
    for (const auto& [key, types] : t.keys) {
      auto ot = o->second.keys.find(key);
      if (ot == o->second.keys.end()) continue;
      for (const auto& type : ot->second)
        EXPECT_TRUE(types.count(type))
            << key << ": ours " << type << ", torch's " << *types.begin();
    }
    if (no_args.count(cls)) continue;
    for (const auto& [key, types] : t.args) {
      auto ot = o->second.args.find(key);
      ASSERT_NE(ot, o->second.args.end()) << "args key missing: " << key;
      for (const auto& type : ot->second) {
        if (key == "memory bandwidth (GB/s)" && type == "string") continue;  // "N/A"
        EXPECT_TRUE(types.count(type))
            << "args." << key << ": ours " << type << ", torch's " << *types.begin();
      }
    }
  }
  EXPECT_GE(compared, 16u);
}

// The real torch trace imports: every kernel, copy, memset and launch call.
TEST(JsonSchema, TorchTraceImportsEveryKernel) {
  std::map<std::string, size_t> by_cat;
  for (const auto& e : TorchTrace()["traceEvents"])
    if (e.value("ph", "") == "X") ++by_cat[e.value("cat", "")];
  importer::ImportFormat format;
  auto t = importer::ImportFile(TorchTracePath(), &format);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(format, importer::ImportFormat::kKinetoJson);
  EXPECT_EQ(t->Rows<KernelEvent>().size(), by_cat["kernel"]);
  EXPECT_EQ(by_cat["kernel"], 540u);
  EXPECT_EQ(t->Rows<MemcpyEvent>().size(), by_cat["gpu_memcpy"]);
  EXPECT_EQ(t->Rows<MemsetEvent>().size(), by_cat["gpu_memset"]);
  EXPECT_EQ(t->Rows<ApiEvent>().size(), by_cat["cuda_runtime"] + by_cat["cuda_driver"]);
  ASSERT_EQ(t->Rows<Process>().size(), 1u);
  EXPECT_EQ(t->Rows<Process>()[0].cupti_version, 130001u);
}

// torch JSON -> SBT file -> JSON (streamed from the file, as `tracesmith
// export` does): kernel names, exact times and torch's kernel args.
TEST(JsonRoundTrip, TorchTraceThroughSbtFileKeepsKernels) {
  auto first = importer::ImportFile(TorchTracePath());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  TempPath sbt(".sbt"), out(".json");
  ASSERT_TRUE(format::WriteTraceFile(*first, sbt.path()).ok());
  auto s = exporter::ExportSbtFile(sbt.path(), ExportFormat::kJson, out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::string text = ReadFileToString(out.path()).value();
  auto second = importer::ImportKinetoJson(text);
  ASSERT_TRUE(second.ok()) << second.status().ToString();

  // Exact nanoseconds, names and launch shapes, kernel by kernel.
  ASSERT_EQ(second->Rows<KernelEvent>().size(), first->Rows<KernelEvent>().size());
  std::map<uint32_t, const KernelEvent*> by_corr;
  for (const auto& k : first->Rows<KernelEvent>()) by_corr[k.correlation_id] = &k;
  for (const auto& k : second->Rows<KernelEvent>()) {
    const KernelEvent& o = *by_corr.at(k.correlation_id);
    EXPECT_EQ(second->strings.Get(k.name_id), first->strings.Get(o.name_id));
    EXPECT_EQ(k.start_ns, o.start_ns);
    EXPECT_EQ(k.end_ns, o.end_ns);
    EXPECT_EQ(k.grid_x, o.grid_x);
    EXPECT_EQ(k.grid_y, o.grid_y);
    EXPECT_EQ(k.block_x, o.block_x);
    EXPECT_EQ(k.registers_per_thread, o.registers_per_thread);
    EXPECT_EQ(k.dynamic_shared_bytes, o.dynamic_shared_bytes);
  }

  // Against torch's own kernel events: every arg we carry has torch's value
  // (blocks/warps per SM and occupancy are recomputed, from the same
  // inputs; compared loosely).
  std::map<uint64_t, const json*> torch_kernels;
  for (const auto& e : TorchTrace()["traceEvents"])
    if (e.value("cat", "") == "kernel") torch_kernels[e["args"]["correlation"]] = &e;
  json ours = json::parse(text);
  size_t checked = 0;
  for (const auto& e : ours["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    const json& t = *torch_kernels.at(e["args"]["correlation"]);
    EXPECT_EQ(e["name"], t["name"]);
    EXPECT_EQ(e["pid"], t["pid"]);
    EXPECT_EQ(e["tid"], t["tid"]);
    for (const char* key : {"External id", "device", "context", "stream", "correlation",
                            "registers per thread", "shared memory", "grid", "block", "queued"})
      EXPECT_EQ(e["args"][key], t["args"][key]) << key << " of " << t["name"];
    EXPECT_NEAR(e["args"]["blocks per SM"].get<double>(), t["args"]["blocks per SM"].get<double>(),
                1e-4);
    EXPECT_NEAR(e["args"]["warps per SM"].get<double>(), t["args"]["warps per SM"].get<double>(),
                1e-3);
    ++checked;
  }
  EXPECT_EQ(checked, torch_kernels.size());
}

}  // namespace
}  // namespace tracesmith
