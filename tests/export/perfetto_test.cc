// Perfetto exporter: structural validity (perfetto_checker.h), decoding with
// the official schema through protoc, and content equal to the input trace.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "export/perfetto_checker.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith {
namespace {

using namespace model;
using exporter::ExportFormat;
using testing::CheckPerfettoTrace;
using testing::PerfettoCheck;
using testing::TempPath;

std::string SourceDir() {
  const char* d = std::getenv("TS_SOURCE_DIR");
  return d ? d : ".";
}

PerfettoCheck ExportAndCheck(const Trace& trace, exporter::ExportStats* stats = nullptr) {
  TempPath out(".pftrace");
  auto s = exporter::ExportTrace(trace, ExportFormat::kPerfetto, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (stats && s.ok()) *stats = *s;
  auto bytes = ReadFileToString(out.path());
  EXPECT_TRUE(bytes.ok());
  return CheckPerfettoTrace(bytes.ok() ? *bytes : "");
}

Trace SmallSynthetic(uint64_t kernels = 3000) {
  SyntheticOptions o;
  o.kernels = kernels;
  o.kernel_names = 12;
  o.memcpy_every = 20;
  o.sync_every = 100;
  o.nvtx_every = 50;
  return MakeSyntheticTrace(o);
}

// Slices of the kernel tracks, keyed by (start, end, name): exact content.
std::multiset<std::tuple<uint64_t, uint64_t, std::string>> KernelSlices(const PerfettoCheck& c) {
  std::multiset<std::tuple<uint64_t, uint64_t, std::string>> out;
  for (const auto& s : c.slices)
    if (s.args.count("launch")) out.emplace(s.start, s.end, s.name);
  return out;
}

TEST(PerfettoExport, SyntheticTraceIsStructurallyValidAndComplete) {
  Trace t = SmallSynthetic();
  exporter::ExportStats stats;
  PerfettoCheck c = ExportAndCheck(t, &stats);
  ASSERT_TRUE(c.ok()) << c.Summary();

  std::multiset<std::tuple<uint64_t, uint64_t, std::string>> expected;
  for (const auto& k : t.Rows<KernelEvent>())
    expected.emplace(k.start_ns, k.end_ns, std::string(t.strings.Get(k.demangled_id)));
  EXPECT_EQ(KernelSlices(c), expected);

  // Every event kind present becomes slices: kernels, copies, syncs, API, NVTX.
  size_t expected_slices = t.Rows<KernelEvent>().size() + t.Rows<MemcpyEvent>().size() +
                           t.Rows<SyncEvent>().size() + t.Rows<ApiEvent>().size() +
                           t.Rows<NvtxRangeEvent>().size();
  EXPECT_EQ(c.slices.size(), expected_slices);

  // One flow per launch call whose GPU op exists.
  std::set<uint32_t> gpu;
  for (const auto& k : t.Rows<KernelEvent>()) gpu.insert(k.correlation_id);
  for (const auto& m : t.Rows<MemcpyEvent>()) gpu.insert(m.correlation_id);
  size_t linked = 0;
  for (const auto& a : t.Rows<ApiEvent>()) linked += gpu.count(a.correlation_id);
  EXPECT_EQ(c.flows, linked);
  EXPECT_EQ(stats.flows, linked);

  // Kernel arguments: the launch configuration text.
  const KernelEvent& k0 = t.Rows<KernelEvent>()[0];
  bool found = false;
  for (const auto& s : c.slices)
    if (s.start == k0.start_ns && s.args.count("launch")) {
      found = true;
      EXPECT_NE(s.args.at("launch").find("grid [" + std::to_string(k0.grid_x) + ", 1, 1]"),
                std::string::npos)
          << s.args.at("launch");
      EXPECT_NE(s.args.at("launch").find("registers " + std::to_string(k0.registers_per_thread)),
                std::string::npos);
    }
  EXPECT_TRUE(found);
  // Copies carry bytes and bandwidth.
  const MemcpyEvent& m0 = t.Rows<MemcpyEvent>()[0];
  found = false;
  for (const auto& s : c.slices)
    if (s.start == m0.start_ns && s.args.count("bytes")) {
      found = true;
      EXPECT_EQ(s.args.at("bytes"), std::to_string(m0.bytes));
      EXPECT_TRUE(s.args.count("bandwidth (GB/s)"));
    }
  EXPECT_TRUE(found);
  // Utilization counter exists and stays within 0..100.
  ASSERT_TRUE(c.counter_values.count("GPU utilization %"));
  for (double v : c.counter_values.at("GPU utilization %")) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 100.0);
  }
}

TEST(PerfettoExport, DecodesWithOfficialSchema) {
  if (std::system("protoc --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc not installed (Debian package protobuf-compiler): schema check skipped";
  Trace t = SmallSynthetic(500);
  TempPath out(".pftrace"), decoded(".txt");
  ASSERT_TRUE(exporter::ExportTrace(t, ExportFormat::kPerfetto, out.path()).ok());
  std::string dir = SourceDir() + "/tests/export/data";
  std::string cmd = "protoc --proto_path=" + dir + " --decode=perfetto.protos.Trace " + dir +
                    "/perfetto_trace.proto < " + out.path() + " > " + decoded.path() + " 2>&1";
  int rc = std::system(cmd.c_str());
  auto text = ReadFileToString(decoded.path());
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(rc, 0) << text->substr(0, 2000);
  EXPECT_NE(text->find("track_descriptor"), std::string::npos);
  EXPECT_NE(text->find("TYPE_SLICE_BEGIN"), std::string::npos);
  EXPECT_NE(text->find("clock_snapshot"), std::string::npos);
  EXPECT_NE(text->find("cudaLaunchKernel"), std::string::npos);
  // Unknown fields would mean numbers that do not match the schema.
  EXPECT_EQ(text->find("\n1: "), std::string::npos);
}

TEST(PerfettoExport, OverlappingSlicesGoToExtraLanes) {
  Trace t;
  uint32_t name = t.strings.Intern("k");
  // Partial overlap on one stream, plus a proper nesting.
  for (auto [s, e] :
       {std::pair<uint64_t, uint64_t>{100, 200}, {150, 300}, {160, 170}, {400, 500}}) {
    KernelEvent k{};
    k.start_ns = s;
    k.end_ns = e;
    k.name_id = name;
    k.stream_id = 7;
    t.Rows<KernelEvent>().push_back(k);
  }
  exporter::ExportStats stats;
  PerfettoCheck c = ExportAndCheck(t, &stats);
  ASSERT_TRUE(c.ok()) << c.Summary();
  EXPECT_EQ(c.slices.size(), 4u);
  EXPECT_EQ(stats.extra_lanes, 1u);
  std::set<uint64_t> tracks;
  for (const auto& s : c.slices) tracks.insert(s.track);
  EXPECT_EQ(tracks.size(), 2u);
}

TEST(PerfettoExport, StreamedFileMatchesInMemoryExport) {
  // Small chunks and a rare kind (memcpy) make file order differ from time order.
  Trace t = SmallSynthetic(4000);
  TempPath sbt(".sbt"), out(".pftrace");
  ASSERT_TRUE(format::WriteTraceFile(t, sbt.path(), {.zstd_level = 0, .rows_per_chunk = 256}).ok());
  auto stats = exporter::ExportSbtFile(sbt.path(), ExportFormat::kPerfetto, out.path());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  auto bytes = ReadFileToString(out.path());
  ASSERT_TRUE(bytes.ok());
  PerfettoCheck streamed = CheckPerfettoTrace(*bytes);
  ASSERT_TRUE(streamed.ok()) << streamed.Summary();
  PerfettoCheck direct = ExportAndCheck(t);
  EXPECT_EQ(KernelSlices(streamed), KernelSlices(direct));
  EXPECT_EQ(streamed.slices.size(), direct.slices.size());
  EXPECT_EQ(streamed.flows, direct.flows);
  EXPECT_EQ(stats->extra_lanes, 0u) << "the reorder window should restore time order";
}

TEST(PerfettoExport, OverflowingReorderWindowStaysValid) {
  // A tiny window forces events out before earlier ones arrive: the output
  // must stay valid (extra lanes, no dangling or backwards flows) and complete.
  Trace t = SmallSynthetic(3000);
  TempPath sbt(".sbt"), out(".pftrace");
  ASSERT_TRUE(format::WriteTraceFile(t, sbt.path(), {.zstd_level = 0, .rows_per_chunk = 128}).ok());
  exporter::ExportOptions options;
  options.max_buffered_events = 100;
  auto stats = exporter::ExportSbtFile(sbt.path(), ExportFormat::kPerfetto, out.path(), options);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  auto bytes = ReadFileToString(out.path());
  ASSERT_TRUE(bytes.ok());
  PerfettoCheck c = CheckPerfettoTrace(*bytes);
  ASSERT_TRUE(c.ok()) << c.Summary();
  PerfettoCheck direct = ExportAndCheck(t);
  EXPECT_EQ(KernelSlices(c), KernelSlices(direct));
  EXPECT_LE(c.flows, direct.flows);
}

TEST(PerfettoExport, CallstacksAreInternedAndResolve) {
  Trace t;
  StackBuilder sb(&t);
  uint32_t main_fn = t.strings.Intern("main"), step = t.strings.Intern("train_step"),
           file = t.strings.Intern("train.py");
  uint32_t f_main = sb.InternFrame(
      Frame{.function_id = main_fn, .file_id = file, .line = 3, .kind = kFramePython});
  uint32_t f_step =
      sb.InternFrame(Frame{.function_id = step, .file_id = file, .line = 9, .kind = kFramePython});
  std::vector<uint32_t> leaf_first = {f_step, f_main};
  uint32_t stack = sb.InternStack(leaf_first);
  uint32_t launch = t.strings.Intern("cudaLaunchKernel");
  for (int i = 0; i < 3; ++i) {
    ApiEvent a{};
    a.start_ns = 1000 + i * 100;
    a.end_ns = a.start_ns + 50;
    a.correlation_id = i + 1;
    a.pid = 1;
    a.tid = 2;
    a.name_id = launch;
    a.stack_id = stack;
    t.Rows<ApiEvent>().push_back(a);
  }
  PerfettoCheck c = ExportAndCheck(t);
  ASSERT_TRUE(c.ok()) << c.Summary();
  ASSERT_EQ(c.slices.size(), 3u);
  for (const auto& s : c.slices) {
    EXPECT_EQ(s.callstack_frames, 2u);
    EXPECT_EQ(s.leaf_function, "train_step");  // Perfetto lists root first, leaf last
  }
  EXPECT_EQ(c.flows, 0u);  // no GPU op: no dangling arrows
}

TEST(PerfettoExport, MemoryCounterTracksLiveBytes) {
  Trace t;
  auto add = [&](uint64_t ts, uint64_t addr, uint64_t bytes, uint8_t op) {
    MemoryEvent m{};
    m.ts_ns = ts;
    m.address = addr;
    m.bytes = bytes;
    m.op = op;
    m.memory_kind = kMemDevice;
    t.Rows<MemoryEvent>().push_back(m);
  };
  add(10, 0x1000, 100, kMemoryAlloc);
  add(20, 0x2000, 50, kMemoryAlloc);
  add(30, 0x1000, 0, kMemoryFree);   // size taken from the allocation
  add(40, 0x9000, 10, kMemoryFree);  // allocated before the capture: changes nothing
  PerfettoCheck c = ExportAndCheck(t);
  ASSERT_TRUE(c.ok()) << c.Summary();
  ASSERT_TRUE(c.counter_values.count("Device memory in use"));
  EXPECT_EQ(c.counter_values.at("Device memory in use"), (std::vector<double>{100, 150, 50}));
  // Lifetimes as slices on the device's "Allocations" track; still live: to the end.
  std::multiset<std::tuple<uint64_t, uint64_t, std::string>> lifetimes;
  for (const auto& s : c.slices) lifetimes.emplace(s.start, s.end, s.name);
  EXPECT_EQ(lifetimes, (std::multiset<std::tuple<uint64_t, uint64_t, std::string>>{
                           {10, 30, "alloc 100 B"}, {20, 40, "alloc 50 B"}}));
}

// A library's NVTX payload (NCCL's) shows as an instant named by its text.
TEST(PerfettoExport, NvtxPayloadsAreInstantsNamedByTheirText) {
  Trace t;
  NvtxPayloadEvent p{};
  p.ts_ns = 100;
  p.pid = 1;
  p.tid = 2;
  p.text_id = t.strings.Intern("NCCL communicator ID=5; Message size [bytes]=64");
  t.Rows<NvtxPayloadEvent>().push_back(p);
  TempPath out(".pftrace");
  ASSERT_TRUE(exporter::ExportTrace(t, ExportFormat::kPerfetto, out.path()).ok());
  auto bytes = ReadFileToString(out.path());
  ASSERT_TRUE(bytes.ok());
  PerfettoCheck c = CheckPerfettoTrace(*bytes);
  ASSERT_TRUE(c.ok()) << c.Summary();
  EXPECT_EQ(c.instants, 1u);
  EXPECT_NE(bytes->find("NCCL communicator ID=5; Message size [bytes]=64"), std::string::npos);
}

void AddKernel(Trace* t, uint64_t start, uint64_t end) {
  KernelEvent k{};
  k.start_ns = start;
  k.end_ns = end;
  k.name_id = t->strings.Intern("k");
  k.stream_id = 7;
  t->Rows<KernelEvent>().push_back(k);
}

// The counter says how busy each 1 ms window is; runs of equal values are
// written once.
TEST(PerfettoExport, UtilizationPerWindow) {
  Trace t;
  for (auto [s, e] : {std::pair<uint64_t, uint64_t>{0, 100'000},  // window 0: 60%
                      {500'000, 3'500'000},                       // 1-2: 100%, 3: 50%, 4: 0%
                      {10'250'000, 1'000'750'000}})  // 10: 75%, 11-999: 100%, 1000: 75%
    AddKernel(&t, s, e);
  PerfettoCheck c = ExportAndCheck(t);
  ASSERT_TRUE(c.ok()) << c.Summary();
  EXPECT_EQ(c.counter_values.at("GPU utilization %"),
            (std::vector<double>{60, 100, 50, 0, 75, 100, 75, 0}));
}

// A kernel lasting 9e15 us (a forged or corrupt end time) covers 9e12
// utilization windows: the export must not visit them one by one.
TEST(PerfettoExport, AbsurdKernelDurationExportsInBoundedTime) {
  Trace t;
  AddKernel(&t, 1'000, 2'000);
  AddKernel(&t, 3'000, 3'000 + 9'000'000'000'000'000'000ull);
  const auto begin = std::chrono::steady_clock::now();
  PerfettoCheck c = ExportAndCheck(t);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(seconds, 5.0) << "the utilization counter walked every window";
  ASSERT_TRUE(c.ok()) << c.Summary();
  EXPECT_EQ(c.slices.size(), 2u);
  EXPECT_EQ(c.counter_values.at("GPU utilization %"), (std::vector<double>{99.9, 100, 0.2, 0}));
}

TEST(PerfettoChecker, RejectsBrokenTraces) {
  // The checker must be able to fail: an END with no BEGIN on an undescribed track.
  std::string packet;
  auto varint = [](std::string* s, uint64_t v) {
    while (v >= 0x80) {
      s->push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    s->push_back(static_cast<char>(v));
  };
  std::string te;
  varint(&te, (9 << 3) | 0);
  varint(&te, 2);  // TYPE_SLICE_END
  varint(&te, (11 << 3) | 0);
  varint(&te, 42);  // track uuid never described
  varint(&packet, (8 << 3) | 0);
  varint(&packet, 5);
  varint(&packet, (10 << 3) | 0);
  varint(&packet, 1);
  varint(&packet, (11 << 3) | 2);
  varint(&packet, te.size());
  packet += te;
  std::string trace;
  varint(&trace, (1 << 3) | 2);
  varint(&trace, packet.size());
  trace += packet;
  PerfettoCheck c = CheckPerfettoTrace(trace);
  EXPECT_FALSE(c.ok());
  EXPECT_GE(c.errors.size(), 2u);
}

}  // namespace
}  // namespace tracesmith
