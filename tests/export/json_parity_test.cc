// Kineto-JSON parity, field by field (issue #14 item 4), on real traces:
// examples/traces/transformer_train.sbt (H100 capture with driver-launch
// rows, cuLaunchKernelEx, stream and context syncs) and the real
// torch.profiler trace in tests/export/data (torch 2.11, H200).
// - baseTimeNanoseconds: Kineto's (the first timestamp rounded down to a
//   multiple of 7889238 s), so an imported torch trace exports torch's base
//   and torch's ts values;
// - driver launch rows: cat "cuda_driver", each with the ac2g flow to the
//   GPU op of its correlation id;
// - context synchronization: pid = device, tid = -1 and args.stream = -1
//   (CUPTI's invalid stream id read as int32), not a phantom stream 0;
// - import -> export of the torch trace keeps cpu_op / user_annotation /
//   gpu_user_annotation args and the fwdbwd flows.
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/import/import.h"

namespace tracesmith {
namespace {

using namespace model;
using exporter::ExportFormat;
using json = nlohmann::json;
using testing::TempPath;

constexpr uint64_t kTrimonthNs = 7889238ull * 1000000000ull;

std::string SourceDir() {
  const char* d = std::getenv("TS_SOURCE_DIR");
  return d ? d : ".";
}
std::string TransformerPath() { return SourceDir() + "/examples/traces/transformer_train.sbt"; }
std::string TorchPath() { return SourceDir() + "/tests/export/data/torch_profiler_mlp.json.gz"; }

const json& TorchJson() {
  static const json j = [] {
    gzFile f = gzopen(TorchPath().c_str(), "rb");
    std::string text;
    if (f != nullptr) {
      char buf[65536];
      int n;
      while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
      gzclose(f);
    }
    return json::parse(text);
  }();
  return j;
}

// Exported from the SBT file, streamed, as `tracesmith export` does.
json ExportFile(const std::string& sbt) {
  TempPath out(".json");
  auto s = exporter::ExportSbtFile(sbt, ExportFormat::kJson, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto text = ReadFileToString(out.path());
  return json::parse(text.ok() ? *text : std::string("{}"));
}

// The torch trace imported, written to SBT, exported back.
const json& TorchRoundTrip() {
  static const json j = [] {
    auto t = importer::ImportFile(TorchPath());
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    TempPath sbt(".sbt");
    EXPECT_TRUE(format::WriteTraceFile(*t, sbt.path()).ok());
    return ExportFile(sbt.path());
  }();
  return j;
}

const json& TransformerJson() {
  static const json j = ExportFile(TransformerPath());
  return j;
}

// ts in ns relative to the file's base, exactly (from the double's text
// would do as well: three decimals below 2^53 ns round-trip).
int64_t Ns(const json& ts) { return std::llround(ts.get<double>() * 1000.0); }

TEST(KinetoParity, BaseTimeIsKinetosQuarter) {
  // The torch trace's own base comes back, and so do its ts values.
  const json& torch = TorchJson();
  const json& ours = TorchRoundTrip();
  EXPECT_EQ(ours["baseTimeNanoseconds"], torch["baseTimeNanoseconds"]);
  std::map<uint64_t, json> torch_kernels;
  for (const auto& e : torch["traceEvents"])
    if (e.value("cat", "") == "kernel") torch_kernels[e["args"]["correlation"]] = e;
  size_t checked = 0;
  for (const auto& e : ours["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    const json& t = torch_kernels.at(e["args"]["correlation"]);
    EXPECT_EQ(e["ts"], t["ts"]) << t["name"];
    EXPECT_EQ(e["dur"], t["dur"]) << t["name"];
    ++checked;
  }
  EXPECT_EQ(checked, 540u);

  // A capture: its first timestamp rounded down to a multiple of 7889238 s.
  auto trace = format::ReadTraceFile(TransformerPath());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  uint64_t first = UINT64_MAX;
  for (const auto& k : trace->Rows<KernelEvent>()) first = std::min(first, k.start_ns);
  for (const auto& a : trace->Rows<ApiEvent>()) first = std::min(first, a.start_ns);
  const json& tj = TransformerJson();
  uint64_t base = tj["baseTimeNanoseconds"];
  EXPECT_EQ(base, 1790857026000000000ull);  // the same quarter as the torch trace
  EXPECT_EQ(base % kTrimonthNs, 0u);
  EXPECT_LE(base, first);
  EXPECT_GT(base + kTrimonthNs, first);
  // Every kernel at its exact time from that base.
  std::map<uint32_t, uint64_t> start_by_corr;
  for (const auto& k : trace->Rows<KernelEvent>()) start_by_corr[k.correlation_id] = k.start_ns;
  size_t kernels = 0;
  for (const auto& e : tj["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    EXPECT_EQ(static_cast<uint64_t>(Ns(e["ts"])) + base,
              start_by_corr.at(e["args"]["correlation"].get<uint32_t>()));
    ++kernels;
  }
  EXPECT_EQ(kernels, trace->Rows<KernelEvent>().size());
}

TEST(KinetoParity, DriverLaunchRowsHaveFlowsToTheirKernels) {
  auto trace = format::ReadTraceFile(TransformerPath());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  // Independently of the exporter: driver rows and which of them launched a
  // kernel (same process and correlation id).
  std::set<uint32_t> kernel_corrs;
  for (const auto& k : trace->Rows<KernelEvent>()) kernel_corrs.insert(k.correlation_id);
  size_t driver_rows = 0, driver_launches = 0;
  for (const auto& a : trace->Rows<ApiEvent>()) {
    if (a.domain != kApiDriver) continue;
    ++driver_rows;
    driver_launches += kernel_corrs.count(a.correlation_id);
  }
  ASSERT_GT(driver_launches, 0u);
  EXPECT_EQ(driver_rows, 660u);

  const json& j = TransformerJson();
  std::map<std::tuple<int64_t, int64_t, int64_t>, const json*> drivers;  // (pid, tid, ts)
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "cuda_driver") {
      drivers[{e["pid"], e["tid"], Ns(e["ts"])}] = &e;
      EXPECT_EQ(e["name"], "cuLaunchKernelEx");
      EXPECT_EQ(e["args"]["cbid"], 652);  // CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx
    }
  EXPECT_EQ(drivers.size(), driver_rows);
  // Each flow start on a driver row ends at the kernel of the row's
  // correlation id, on that kernel's device and stream, at its start.
  std::map<uint64_t, const json*> ends;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "f" && e["cat"] == "ac2g") ends[e["id"]] = &e;
  std::map<uint32_t, const json*> kernel_by_corr;
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel") kernel_by_corr[e["args"]["correlation"]] = &e;
  size_t driver_flows = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "s" || e["cat"] != "ac2g") continue;
    auto d = drivers.find({e["pid"], e["tid"], Ns(e["ts"])});
    if (d == drivers.end()) continue;
    ++driver_flows;
    const json& call = *d->second;
    const json& kernel = *kernel_by_corr.at(call["args"]["correlation"]);
    const json& end = *ends.at(e["id"]);
    EXPECT_EQ(end["pid"], kernel["pid"]);
    EXPECT_EQ(end["tid"], kernel["tid"]);
    EXPECT_EQ(end["ts"], kernel["ts"]);
    EXPECT_EQ(end["bp"], "e");
  }
  EXPECT_EQ(driver_flows, driver_launches);

  // The torch trace's own cuda_driver rows (cuLaunchKernel) come back with
  // torch's args and their flows.
  std::map<uint64_t, json> torch_driver;
  for (const auto& e : TorchJson()["traceEvents"])
    if (e.value("cat", "") == "cuda_driver") torch_driver[e["args"]["correlation"]] = e;
  ASSERT_EQ(torch_driver.size(), 35u);
  std::set<std::tuple<int64_t, int64_t, int64_t>> starts;
  for (const auto& e : TorchRoundTrip()["traceEvents"])
    if (e["ph"] == "s" && e["cat"] == "ac2g") starts.insert({e["pid"], e["tid"], Ns(e["ts"])});
  size_t seen = 0;
  for (const auto& e : TorchRoundTrip()["traceEvents"]) {
    if (e.value("cat", "") != "cuda_driver") continue;
    const json& t = torch_driver.at(e["args"]["correlation"]);
    EXPECT_EQ(e["name"], t["name"]);
    EXPECT_EQ(e["ts"], t["ts"]);
    EXPECT_EQ(e["args"], t["args"]);
    EXPECT_TRUE(starts.count({e["pid"], e["tid"], Ns(e["ts"])})) << "no flow from " << e.dump();
    ++seen;
  }
  EXPECT_EQ(seen, torch_driver.size());
}

TEST(KinetoParity, ContextSyncIsOnStreamMinusOne) {
  const json& j = TransformerJson();
  std::map<std::string, size_t> syncs;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") != "cuda_sync") continue;
    const std::string name = e["name"];
    ++syncs[name];
    EXPECT_EQ(e["pid"], e["args"]["device"]);
    EXPECT_EQ(e["tid"], e["args"]["stream"]);
    EXPECT_NE(e["tid"], 0) << "phantom stream 0: " << e.dump();
    if (name == "Context Sync") {
      EXPECT_EQ(e["tid"].get<int64_t>(), -1);
      EXPECT_EQ(e["args"]["stream"].get<int64_t>(), -1);
    } else {
      EXPECT_EQ(name, "Stream Sync");
      EXPECT_EQ(e["tid"], 7);  // the legacy default stream of that capture
    }
  }
  EXPECT_EQ(syncs["Context Sync"], 6u);  // the 6 cudaDeviceSynchronize calls
  EXPECT_EQ(syncs["Stream Sync"], 50u);

  // Imported back, a context sync has no stream again (0 in the model).
  TempPath out(".json");
  ASSERT_TRUE(exporter::ExportSbtFile(TransformerPath(), ExportFormat::kJson, out.path()).ok());
  auto back = importer::ImportFile(out.path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  size_t context = 0;
  for (const auto& s : back->Rows<SyncEvent>())
    if (s.sync_type == kSyncContextSynchronize) {
      EXPECT_EQ(s.stream_id, 0u);
      ++context;
    }
  EXPECT_EQ(context, 6u);
}

// Import -> SBT file -> export of the real torch trace: the CPU-side ranges
// keep every arg torch wrote (External id, Record function id, Sequence
// number, Fwd thread id, Ev Idx), and every fwdbwd flow comes back at the
// same ops.
TEST(KinetoParity, ImportedTorchTraceKeepsOpArgsAndFwdBwdFlows) {
  using Key = std::tuple<std::string, std::string, int64_t, int64_t, std::string>;
  auto ranges = [](const json& j) {
    std::map<Key, json> out;  // (cat, name, pid, tid, ts) -> args
    for (const auto& e : j["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      if (e["ph"] != "X" ||
          (cat != "cpu_op" && cat != "user_annotation" && cat != "gpu_user_annotation"))
        continue;
      out[{cat, e["name"], e["pid"], e["tid"], e["ts"].dump()}] =
          e.contains("args") ? e["args"] : json::object();
    }
    return out;
  };
  auto flows = [](const json& j) {
    std::set<std::string> out;
    for (const auto& e : j["traceEvents"])
      if (e.value("cat", "") == "fwdbwd") out.insert(e.dump());
    return out;
  };
  const json& torch = TorchJson();
  const json& ours = TorchRoundTrip();
  auto want = ranges(torch), got = ranges(ours);
  ASSERT_EQ(want.size(), 3455u + 10u + 5u);
  ASSERT_EQ(got.size(), want.size());
  size_t with_sequence = 0;
  for (const auto& [key, args] : want) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << std::get<1>(key);
    EXPECT_EQ(it->second.dump(), args.dump()) << std::get<1>(key);  // same keys, order, values
    with_sequence += args.contains("Sequence number");
  }
  EXPECT_EQ(with_sequence, 590u);
  auto want_flows = flows(torch);
  EXPECT_EQ(want_flows.size(), 340u);
  EXPECT_EQ(flows(ours), want_flows);

  // Also through an in-memory export and a second import: nothing lost.
  auto again = importer::ImportKinetoJson(ours.dump());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  size_t out = 0, in = 0;
  for (const auto& r : again->Rows<NvtxRangeEvent>()) {
    out += r.flow_out_id != 0;
    in += r.flow_in_id != 0;
  }
  EXPECT_EQ(out, 170u);
  EXPECT_EQ(in, 170u);
}

// A flow with one end missing is not kept (no half flow in the export).
TEST(KinetoParity, FwdBwdFlowWithoutItsOtherEndIsDropped) {
  importer::ImportStats stats;
  auto t = importer::ImportKinetoJson(R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0,
     "args": {"External id": 5, "Record function id": 0, "Sequence number": 9,
              "Fwd thread id": 0, "Ev Idx": 3}},
    {"ph": "s", "id": 4, "pid": 1, "tid": 1, "ts": 1.0, "cat": "fwdbwd", "name": "fwdbwd"},
    {"ph": "f", "id": 8, "pid": 1, "tid": 1, "ts": 1.0, "cat": "fwdbwd", "name": "fwdbwd",
     "bp": "e"}
  ], "baseTimeNanoseconds": 0})",
                                      &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->Rows<NvtxRangeEvent>().size(), 1u);
  const NvtxRangeEvent& r = t->Rows<NvtxRangeEvent>()[0];
  EXPECT_EQ(r.flow_out_id, 0u);
  EXPECT_EQ(r.flow_in_id, 0u);
  EXPECT_EQ(r.sequence_number, 9);
  EXPECT_EQ(r.external_id, 5u);
  EXPECT_EQ(r.ev_idx, 3u);
  EXPECT_EQ(stats.skipped, 2u);
}

}  // namespace
}  // namespace tracesmith
