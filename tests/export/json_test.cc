// Chrome/Kineto JSON exporter: parses, has torch.profiler's keys and types,
// escapes correctly, keeps nanoseconds, and survives JSON -> SBT -> JSON.
//
// The expected key sets are those libkineto writes (output_json.cpp and
// CuptiActivity.cpp: ChromeTraceLogger::handleActivity / metadataJson);
// json_schema_test.cc checks them against a real torch.profiler trace.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <set>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/import/import.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using namespace model;
using exporter::ExportFormat;
using json = nlohmann::json;
using testing::TempPath;

Trace Synthetic(uint64_t kernels = 2000) {
  SyntheticOptions o;
  o.kernels = kernels;
  o.kernel_names = 10;
  o.memcpy_every = 25;
  o.sync_every = 200;
  o.nvtx_every = 100;
  return MakeSyntheticTrace(o);
}

std::string ExportJson(const Trace& t, bool gzip = false) {
  TempPath out(".json");
  exporter::ExportOptions o;
  o.gzip = gzip;
  auto s = exporter::ExportTrace(t, ExportFormat::kJson, out.path(), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!gzip) return ReadFileToString(out.path()).value();
  gzFile f = gzopen(out.path().c_str(), "rb");
  std::string text;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return text;
}

std::set<std::string> Keys(const json& o) {
  std::set<std::string> k;
  for (auto it = o.begin(); it != o.end(); ++it) k.insert(it.key());
  return k;
}

TEST(JsonExport, HasTorchProfilerSchema) {
  Trace t = Synthetic();
  json j = json::parse(ExportJson(t));
  EXPECT_EQ(j["schemaVersion"], 1);
  ASSERT_TRUE(j["deviceProperties"].is_array());
  ASSERT_EQ(j["deviceProperties"].size(), t.Rows<Device>().size());
  for (const auto& d : j["deviceProperties"])
    EXPECT_EQ(Keys(d), (std::set<std::string>{
                           "id", "name", "totalGlobalMem", "computeMajor", "computeMinor",
                           "maxThreadsPerBlock", "maxThreadsPerMultiprocessor", "regsPerBlock",
                           "regsPerMultiprocessor", "warpSize", "sharedMemPerBlock",
                           "sharedMemPerBlockOptin", "sharedMemPerMultiprocessor", "numSms"}));
  EXPECT_TRUE(j["baseTimeNanoseconds"].is_number_unsigned());
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  EXPECT_TRUE(j["traceName"].is_string());
  ASSERT_TRUE(j["traceEvents"].is_array());

  const std::set<std::string> kernel_args = {"External id",
                                             "queued",
                                             "device",
                                             "context",
                                             "stream",
                                             "correlation",
                                             "registers per thread",
                                             "shared memory",
                                             "blocks per SM",
                                             "warps per SM",
                                             "grid",
                                             "block",
                                             "est. achieved occupancy %"};
  const std::set<std::string> copy_args = {"External id",
                                           "device",
                                           "context",
                                           "stream",
                                           "correlation",
                                           "bytes",
                                           "memory bandwidth (GB/s)"};
  std::map<std::string, size_t> by_cat;
  std::map<uint64_t, int> flow_s, flow_f;
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e["ph"];
    if (ph == "s") ++flow_s[e["id"]];
    if (ph == "f") {
      ++flow_f[e["id"]];
      EXPECT_EQ(e["bp"], "e");
      EXPECT_EQ(e["cat"], "ac2g");
    }
    if (ph != "X") continue;
    std::string cat = e["cat"];
    if (std::string(e["name"]).starts_with("ProfilerStep#")) cat += " (step)";
    ++by_cat[cat];
    EXPECT_TRUE(e["name"].is_string());
    EXPECT_TRUE(e["pid"].is_number_integer());
    EXPECT_TRUE(e["tid"].is_number_integer());
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_TRUE(e["dur"].is_number());
    if (cat == "kernel") {
      EXPECT_EQ(Keys(e["args"]), kernel_args);
      EXPECT_EQ(e["args"]["grid"].size(), 3u);
      EXPECT_TRUE(e["args"]["grid"][0].is_number_integer());
      EXPECT_TRUE(e["args"]["est. achieved occupancy %"].is_number_integer());
      EXPECT_EQ(e["pid"], e["args"]["device"]);  // Kineto: pid = device, tid = stream
      EXPECT_EQ(e["tid"], e["args"]["stream"]);
    } else if (cat == "gpu_memcpy") {
      EXPECT_EQ(Keys(e["args"]), copy_args);
      EXPECT_TRUE(e["args"]["memory bandwidth (GB/s)"].is_number());
    } else if (cat == "cuda_runtime") {
      EXPECT_TRUE(e["args"].contains("cbid"));
      EXPECT_TRUE(e["args"].contains("correlation"));
    }
  }
  EXPECT_EQ(by_cat["kernel"], t.Rows<KernelEvent>().size());
  EXPECT_EQ(by_cat["gpu_memcpy"], t.Rows<MemcpyEvent>().size());
  EXPECT_EQ(by_cat["cuda_runtime"], t.Rows<ApiEvent>().size());
  EXPECT_EQ(by_cat["cuda_sync"], t.Rows<SyncEvent>().size());
  EXPECT_EQ(by_cat["user_annotation"], t.Rows<NvtxRangeEvent>().size());
  EXPECT_EQ(flow_s.size(), t.Rows<KernelEvent>().size() + t.Rows<MemcpyEvent>().size());
  EXPECT_EQ(flow_s, flow_f);
}

TEST(JsonExport, EscapesNamesAndKeepsNanoseconds) {
  Trace t;
  const std::string names[] = {"quote\" back\\slash", "line\nbreak\ttab", std::string("ctl\x01", 4),
                               "caf\xc3\xa9", "bad\xff utf8"};
  for (size_t i = 0; i < std::size(names); ++i) {
    KernelEvent k{};
    k.start_ns = 1'000'000'123 + i * 1000;  // sub-microsecond digits
    k.end_ns = k.start_ns + 4567;
    k.name_id = t.strings.Intern(names[i]);
    k.stream_id = 7;
    t.Rows<KernelEvent>().push_back(k);
  }
  std::string text = ExportJson(t);
  json j = json::parse(text);  // throws on bad escaping
  std::vector<std::string> got;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") got.push_back(e["name"]);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0], names[0]);
  EXPECT_EQ(got[1], names[1]);
  EXPECT_EQ(got[2], names[2]);
  EXPECT_EQ(got[3], names[3]);
  EXPECT_EQ(got[4], "bad\xef\xbf\xbd utf8");  // U+FFFD for the invalid byte
  // Exact nanoseconds through the importer.
  auto back = importer::ImportKinetoJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->Rows<KernelEvent>().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(back->Rows<KernelEvent>()[i].start_ns, t.Rows<KernelEvent>()[i].start_ns);
    EXPECT_EQ(back->Rows<KernelEvent>()[i].end_ns, t.Rows<KernelEvent>()[i].end_ns);
  }
}

TEST(JsonExport, GzipMatchesPlain) {
  Trace t = Synthetic(300);
  EXPECT_EQ(ExportJson(t, true), ExportJson(t, false));
}

// JSON -> SBT -> JSON keeps kernel names, times and args.
TEST(JsonRoundTrip, KeepsNamesTimesAndArgs) {
  Trace t = Synthetic();
  std::string first = ExportJson(t);
  auto imported = importer::ImportKinetoJson(first);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  ASSERT_EQ(imported->Rows<KernelEvent>().size(), t.Rows<KernelEvent>().size());
  ASSERT_EQ(imported->Rows<MemcpyEvent>().size(), t.Rows<MemcpyEvent>().size());
  ASSERT_EQ(imported->Rows<ApiEvent>().size(), t.Rows<ApiEvent>().size());
  // Kernels keyed by correlation id: every field the JSON carries survives.
  std::map<uint32_t, const KernelEvent*> orig;
  for (const auto& k : t.Rows<KernelEvent>()) orig[k.correlation_id] = &k;
  for (const auto& k : imported->Rows<KernelEvent>()) {
    const KernelEvent& o = *orig.at(k.correlation_id);
    EXPECT_EQ(imported->strings.Get(k.demangled_id), t.strings.Get(o.demangled_id));
    EXPECT_EQ(k.start_ns, o.start_ns);
    EXPECT_EQ(k.end_ns, o.end_ns);
    EXPECT_EQ(k.device_id, o.device_id);
    EXPECT_EQ(k.stream_id, o.stream_id);
    EXPECT_EQ(k.grid_x, o.grid_x);
    EXPECT_EQ(k.block_x, o.block_x);
    EXPECT_EQ(k.registers_per_thread, o.registers_per_thread);
    EXPECT_EQ(k.static_shared_bytes + k.dynamic_shared_bytes,
              o.static_shared_bytes + o.dynamic_shared_bytes);
    EXPECT_EQ(k.pid, o.pid);
  }
  for (size_t i = 0; i < t.Rows<MemcpyEvent>().size(); ++i) {
    EXPECT_EQ(imported->Rows<MemcpyEvent>()[i].bytes, t.Rows<MemcpyEvent>()[i].bytes);
    EXPECT_EQ(imported->Rows<MemcpyEvent>()[i].copy_kind, t.Rows<MemcpyEvent>()[i].copy_kind);
    EXPECT_EQ(imported->Rows<MemcpyEvent>()[i].src_kind, t.Rows<MemcpyEvent>()[i].src_kind);
  }
  // Second export: the same events with the same args.
  std::string second = ExportJson(*imported);
  json a = json::parse(first), b = json::parse(second);
  auto events = [](const json& j) {
    std::multiset<std::string> out;
    uint64_t base = j["baseTimeNanoseconds"];
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X" && e["ph"] != "s" && e["ph"] != "f") continue;
      json c = e;
      // Absolute time: the two files may pick different bases.
      c["ts"] = static_cast<uint64_t>(std::llround(e["ts"].get<double>() * 1000)) + base;
      out.insert(c.dump());
    }
    return out;
  };
  EXPECT_EQ(events(a), events(b));
}

TEST(KinetoImport, ImportsEveryCategoryWithExactAbsoluteTimes) {
  const char* src = std::getenv("TS_SOURCE_DIR");
  std::string path = std::string(src ? src : ".") + "/fuzz/corpus/kineto_import/seed.json";
  importer::ImportFormat format;
  auto t = importer::ImportFile(path, &format);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->Rows<KernelEvent>().size(), 1u);
  const KernelEvent& k = t->Rows<KernelEvent>()[0];
  // baseTimeNanoseconds 1.7e18 + 18.123 us: beyond a double's precision, exact here.
  EXPECT_EQ(k.start_ns, 1700000000000018123ull);
  EXPECT_EQ(k.end_ns, 1700000000000043579ull);
  EXPECT_EQ(k.pid, 4242u);  // from the launch call with the same correlation id
  EXPECT_EQ(k.grid_x, 66u);
  EXPECT_EQ(k.dynamic_shared_bytes, 16384u);
  ASSERT_EQ(t->Rows<MemcpyEvent>().size(), 1u);
  EXPECT_EQ(t->Rows<MemcpyEvent>()[0].copy_kind, kCopyHtoD);
  EXPECT_EQ(t->Rows<MemcpyEvent>()[0].src_kind, kMemPinned);
  EXPECT_EQ(t->Rows<MemcpyEvent>()[0].dst_kind, kMemDevice);
  ASSERT_EQ(t->Rows<MemsetEvent>().size(), 1u);
  EXPECT_EQ(t->Rows<MemsetEvent>()[0].memory_kind, kMemDevice);
  ASSERT_EQ(t->Rows<SyncEvent>().size(), 1u);
  EXPECT_EQ(t->Rows<SyncEvent>()[0].sync_type, kSyncStreamSynchronize);
  ASSERT_EQ(t->Rows<ApiEvent>().size(), 1u);
  EXPECT_EQ(t->Rows<ApiEvent>()[0].external_id, 7u);
  EXPECT_EQ(t->Rows<ApiEvent>()[0].cbid, 211u);
  ASSERT_EQ(t->Rows<NvtxRangeEvent>().size(), 1u);  // the cpu_op
  ASSERT_EQ(t->Rows<NvtxMarkerEvent>().size(), 1u);
  ASSERT_EQ(t->Rows<Device>().size(), 1u);
  EXPECT_EQ(t->Rows<Device>()[0].sm_count, 132u);
  ASSERT_EQ(t->Rows<Process>().size(), 1u);
  EXPECT_EQ(t->strings.Get(t->Rows<Process>()[0].name_id), "python3");
  ASSERT_EQ(t->Rows<Thread>().size(), 1u);
}

TEST(KinetoImport, RejectsMalformedJsonWithOffset) {
  auto r = importer::ImportKinetoJson(R"({"traceEvents": [ {"ph": "X", "ts": 1,)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("byte"), std::string::npos) << r.status().message();
}

TEST(KinetoImport, SkipsEventsWithoutNumericIds) {
  importer::ImportStats stats;
  auto r = importer::ImportKinetoJson(
      R"({"traceEvents": [
        {"ph": "X", "cat": "Trace", "name": "step", "pid": "Spans", "tid": "1", "ts": 1.0, "dur": 2.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 1.5, "dur": 0.25},
        {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 9.0}
      ]})",
      &stats);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->Rows<NvtxRangeEvent>().size(), 1u);
  EXPECT_EQ(r->strings.Get(r->Rows<NvtxRangeEvent>()[0].domain_id), "cpu_op");
  EXPECT_EQ(r->Rows<NvtxRangeEvent>()[0].start_ns, 1500u);
  EXPECT_EQ(r->Rows<NvtxRangeEvent>()[0].end_ns, 1750u);
  EXPECT_EQ(stats.events, 1u);
  EXPECT_EQ(stats.skipped, 2u);
}

}  // namespace
}  // namespace tracesmith
