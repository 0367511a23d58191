// Memory in every export format comes from the one live-memory model
// (analysis::LiveMemory, MemoryOwners). A hand-built allocation sequence --
// nested and overlapping lifetimes, a free without a size, a free of memory
// never allocated, two processes on one device, pinned host memory, and a
// VMM reserve/create/map/unmap/release/unreserve -- is exported to Perfetto,
// Chrome/Kineto JSON and SQLite, and every "memory in use" value each format
// writes is compared, point by point, with numbers worked out by hand below
// (and with LiveMemory's own, which must agree with them too).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "export/perfetto_checker.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/memory/memory_model.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith {
namespace {

using namespace model;
using exporter::ExportFormat;
using json = nlohmann::json;
using testing::CheckPerfettoTrace;
using testing::PerfettoCheck;
using testing::PerfettoSlice;
using testing::TempPath;

constexpr uint32_t kA = 100, kB = 200;  // two processes, both on device 0
constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;
constexpr uint64_t kTraceEnd = 20500;  // a kernel of process A ends the trace

std::string SourceDir() {
  const char* d = std::getenv("TS_SOURCE_DIR");
  return d ? d : ".";
}

// A native frame in the library at `path`.
uint32_t LibraryFrame(Trace* t, StackBuilder* sb, uint32_t mapping_id, const char* path,
                      const char* function) {
  Mapping m{};
  m.mapping_id = mapping_id;
  m.start = uint64_t{mapping_id} << 32;
  m.end = m.start + 0x100000;
  m.path_id = t->strings.Intern(path);
  m.pid = kA;
  t->Rows<Mapping>().push_back(m);
  return sb->InternFrame(Frame{.rel_pc = 0x40,
                               .mapping_id = mapping_id,
                               .function_id = t->strings.Intern(function),
                               .kind = kFrameNative});
}

Trace MemoryTrace() {
  Trace t;
  for (uint32_t pid : {kA, kB}) {
    Process p{};
    p.pid = pid;
    p.name_id = t.strings.Intern(pid == kA ? "trainer" : "server");
    t.Rows<Process>().push_back(p);
    Device d{};
    d.pid = pid;
    d.device_id = 0;
    d.name_id = t.strings.Intern("NVIDIA H100");
    t.Rows<Device>().push_back(d);
  }
  // Stacks: the CUDA runtime's frame (never an owner) under NCCL / c10.
  StackBuilder sb(&t);
  const uint32_t cudart = LibraryFrame(&t, &sb, 1, "/usr/lib/libcudart.so.12", "cudaMalloc");
  const uint32_t nccl = LibraryFrame(&t, &sb, 2, "/usr/lib/libnccl.so.2", "ncclCommInit");
  const uint32_t c10 =
      LibraryFrame(&t, &sb, 3, "/py/site-packages/torch/lib/libc10_cuda.so", "malloc");
  const std::vector<uint32_t> nccl_frames = {cudart, nccl}, c10_frames = {cudart, c10};
  const uint32_t nccl_stack = sb.InternStack(nccl_frames);
  const uint32_t c10_stack = sb.InternStack(c10_frames);

  // The call that made the first allocation, on thread 101.
  ApiEvent call{};
  call.start_ns = 900;
  call.end_ns = 1100;
  call.correlation_id = 7;
  call.pid = kA;
  call.tid = 101;
  call.domain = kApiDriver;
  call.name_id = t.strings.Intern("cuMemAlloc_v2");
  t.Rows<ApiEvent>().push_back(call);

  auto mem = [&](uint64_t ts, uint32_t pid, uint8_t op, uint64_t address, uint64_t bytes,
                 uint32_t stack = 0, uint8_t kind = kMemDevice, uint32_t corr = 0) {
    MemoryEvent m{};
    m.ts_ns = ts;
    m.pid = pid;
    m.device_id = 0;
    m.op = op;
    m.address = address;
    m.bytes = bytes;
    m.stack_id = stack;
    m.memory_kind = kind;
    m.correlation_id = corr;
    t.Rows<MemoryEvent>().push_back(m);
  };
  mem(1000, kA, kMemoryAlloc, 0x1000, 1 * MiB, nccl_stack, kMemDevice, 7);  // outer
  mem(2000, kA, kMemoryAlloc, 0x2000, 256 * KiB, c10_stack);                // nested in the outer
  mem(3000, kB, kMemoryAlloc, 0x1000, 512 * KiB);                           // the other process
  mem(4000, kA, kMemoryFree, 0x2000, 0);                                    // free without size
  mem(5000, kA, kMemoryAlloc, 0x3000, 128 * KiB);                           // outlives the outer
  mem(6000, kA, kMemoryFree, 0x9000, 4096);                                 // never allocated
  mem(7000, kA, kMemoryFree, 0x1000, 1 * MiB);
  mem(8000, kA, kMemoryVmmReserve, 0xa0000000, 4 * MiB);
  mem(9000, kA, kMemoryVmmCreate, 0x55, 2 * MiB);  // address = the handle
  mem(10000, kA, kMemoryVmmMap, 0xa0000000, 2 * MiB);
  mem(11000, kA, kMemoryVmmUnmap, 0xa0000000, 2 * MiB);
  mem(12000, kA, kMemoryVmmRelease, 0x55, 0);
  mem(13000, kA, kMemoryVmmUnreserve, 0xa0000000, 4 * MiB);
  mem(14000, kB, kMemoryFree, 0x1000, 0);
  mem(15000, kA, kMemoryAlloc, 0x7000, 64 * KiB, 0, kMemPinned);  // live at the end

  KernelEvent k{};
  k.start_ns = 20000;
  k.end_ns = kTraceEnd;
  k.pid = kA;
  k.stream_id = 7;
  k.name_id = t.strings.Intern("k");
  t.Rows<KernelEvent>().push_back(k);
  return t;
}

// (time, live bytes) after each change, per (pid, space): worked out by hand.
using Series = std::vector<std::pair<uint64_t, uint64_t>>;
const Series kDeviceA = {{1000, 1 * MiB},
                         {2000, 1 * MiB + 256 * KiB},
                         {4000, 1 * MiB},  // the size-less free takes its allocation's size
                         {5000, 1 * MiB + 128 * KiB},
                         // 6000: the free of unknown memory changes nothing
                         {7000, 128 * KiB},
                         {9000, 128 * KiB + 2 * MiB},  // VMM physical memory is in use
                         {12000, 128 * KiB}};
const Series kDeviceB = {{3000, 512 * KiB}, {14000, 0}};
const Series kPinnedA = {{15000, 64 * KiB}};

TEST(MemoryExport, TheModelAgreesWithTheHandWorkedNumbers) {
  Trace t = MemoryTrace();
  analysis::LiveMemory live;
  std::map<std::pair<uint32_t, analysis::MemorySpace>, Series> got;
  for (const MemoryEvent& m : t.Rows<MemoryEvent>()) {
    analysis::MemoryChange c = live.Apply(m);
    if (c.kind == analysis::MemoryChange::kAlloc || c.kind == analysis::MemoryChange::kFree)
      got[{c.key.pid, c.key.space}].emplace_back(c.ts_ns, c.live_bytes);
  }
  EXPECT_EQ((got[{kA, analysis::MemorySpace::kDevice}]), kDeviceA);
  EXPECT_EQ((got[{kB, analysis::MemorySpace::kDevice}]), kDeviceB);
  EXPECT_EQ((got[{kA, analysis::MemorySpace::kPinnedHost}]), kPinnedA);
}

// ---- Perfetto -----------------------------------------------------------------

std::string ExportToString(const Trace& t, ExportFormat format, exporter::ExportStats* stats) {
  TempPath out(format == ExportFormat::kJson ? ".json" : ".pftrace");
  auto s = exporter::ExportTrace(t, format, out.path());
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok() && stats) *stats = *s;
  auto bytes = ReadFileToString(out.path());
  return bytes.ok() ? *bytes : "";
}

// The process whose track is an ancestor of `track` (-1 when none).
int64_t PidOf(const PerfettoCheck& c, uint64_t track) {
  for (int depth = 0; track != 0 && depth < 8; ++depth) {
    if (auto it = c.process_pids.find(track); it != c.process_pids.end()) return it->second;
    auto p = c.track_parents.find(track);
    track = p == c.track_parents.end() ? 0 : p->second;
  }
  return -1;
}

// The samples of the counter named `name` under process `pid` (one track).
Series PerfettoCounter(const PerfettoCheck& c, uint32_t pid, const std::string& name) {
  Series out;
  int tracks = 0;
  for (const auto& [uuid, n] : c.track_names) {
    if (n != name || PidOf(c, uuid) != pid) continue;
    ++tracks;
    auto s = c.counter_samples.find(uuid);
    if (s == c.counter_samples.end()) continue;
    for (const auto& x : s->second) out.emplace_back(x.ts, static_cast<uint64_t>(x.value));
  }
  EXPECT_LE(tracks, 1) << name;
  return out;
}

struct AllocSlice {
  int64_t pid;
  std::string name;
  uint64_t start, end;
  std::string address, bytes, owner;
  auto operator<=>(const AllocSlice&) const = default;
};

std::set<AllocSlice> AllocationSlices(const PerfettoCheck& c) {
  std::set<AllocSlice> out;
  for (const auto& s : c.slices)
    if (c.track_names.at(s.track) == "Allocations")
      out.insert({PidOf(c, s.track), s.name, s.start, s.end, s.args.at("address"),
                  s.args.at("bytes"), s.args.at("owner")});
  return out;
}

const PerfettoSlice& SliceAt(const PerfettoCheck& c, const std::string& address, uint64_t start) {
  for (const auto& s : c.slices)
    if (s.args.count("address") && s.args.at("address") == address && s.start == start) return s;
  ADD_FAILURE() << "no allocation slice " << address << " at " << start;
  static const PerfettoSlice none;
  return none;
}

void CheckPerfettoMemory(const PerfettoCheck& c) {
  ASSERT_TRUE(c.ok()) << c.Summary();
  // Live bytes per process and device, per memory space.
  EXPECT_EQ(PerfettoCounter(c, kA, "Device memory in use"), kDeviceA);
  EXPECT_EQ(PerfettoCounter(c, kB, "Device memory in use"), kDeviceB);
  EXPECT_EQ(PerfettoCounter(c, kA, "Pinned host memory in use"), kPinnedA);
  // One counter per owner (MemoryOwners' names).
  EXPECT_EQ(PerfettoCounter(c, kA, "Device memory in use: NCCL"),
            (Series{{1000, 1 * MiB}, {7000, 0}}));
  EXPECT_EQ(PerfettoCounter(c, kA, "Device memory in use: PyTorch caching allocator"),
            (Series{{2000, 256 * KiB}, {4000, 0}}));
  EXPECT_EQ(PerfettoCounter(c, kA, "Device memory in use: (no stack)"),
            (Series{{5000, 128 * KiB}, {9000, 128 * KiB + 2 * MiB}, {12000, 128 * KiB}}));
  EXPECT_EQ(PerfettoCounter(c, kB, "Device memory in use: (no stack)"), kDeviceB);
  EXPECT_EQ(PerfettoCounter(c, kA, "Pinned host memory in use: (no stack)"), kPinnedA);
  // The owners add up to the total at every sample of the total.
  std::vector<Series> owners;
  for (const char* o : {"NCCL", "PyTorch caching allocator", "(no stack)"})
    owners.push_back(PerfettoCounter(c, kA, std::string("Device memory in use: ") + o));
  for (const auto& [ts, total] : kDeviceA) {
    uint64_t sum = 0;
    for (const Series& s : owners) {
      uint64_t v = 0;
      for (const auto& [t, x] : s)
        if (t <= ts) v = x;
      sum += v;
    }
    EXPECT_EQ(sum, total) << "at " << ts;
  }
  // VMM: mapped bytes and reserved address space beside the live bytes.
  EXPECT_EQ(PerfettoCounter(c, kA, "Device memory mapped (VMM)"),
            (Series{{10000, 2 * MiB}, {11000, 0}}));
  EXPECT_EQ(PerfettoCounter(c, kA, "Device address space reserved (VMM)"),
            (Series{{8000, 4 * MiB}, {13000, 0}}));

  // Lifetimes: alloc to free; still live at the end: to the trace's end.
  const std::set<AllocSlice> want = {
      {kA, "alloc 1.00 MiB", 1000, 7000, "0x1000", "1048576", "NCCL"},
      {kA, "alloc 256.00 KiB", 2000, 4000, "0x2000", "262144", "PyTorch caching allocator"},
      {kA, "alloc 128.00 KiB", 5000, kTraceEnd, "0x3000", "131072", "(no stack)"},
      {kA, "cuMemCreate 2.00 MiB", 9000, 12000, "0x55", "2097152", "(no stack)"},
      {kA, "alloc 64.00 KiB", 15000, kTraceEnd, "0x7000", "65536", "(no stack)"},
      {kB, "alloc 512.00 KiB", 3000, 14000, "0x1000", "524288", "(no stack)"},
  };
  EXPECT_EQ(AllocationSlices(c), want);
  // First-free lanes: the nested 0x2000 needs a second lane, 0x3000 reuses
  // it (free again at 4000), the VMM allocation and the pinned one reuse the
  // first (free again at 7000, 12000).
  const PerfettoSlice& outer = SliceAt(c, "0x1000", 1000);
  EXPECT_NE(SliceAt(c, "0x2000", 2000).track, outer.track);
  EXPECT_EQ(SliceAt(c, "0x3000", 5000).track, SliceAt(c, "0x2000", 2000).track);
  EXPECT_EQ(SliceAt(c, "0x55", 9000).track, outer.track);
  EXPECT_EQ(SliceAt(c, "0x7000", 15000).track, outer.track);
  EXPECT_NE(SliceAt(c, "0x1000", 3000).track, outer.track);  // process B's own track
  // Every lane of a device has the same name and parent (the UI merges them).
  EXPECT_EQ(c.track_parents.at(SliceAt(c, "0x2000", 2000).track), c.track_parents.at(outer.track));
  // The allocation's stack, as other slices carry theirs.
  EXPECT_EQ(outer.callstack_frames, 2u);
  EXPECT_EQ(outer.leaf_function, "cudaMalloc");
  EXPECT_EQ(outer.args.at("memory"), "device");
  EXPECT_EQ(outer.args.at("correlation"), "7");
  EXPECT_EQ(SliceAt(c, "0x7000", 15000).args.at("memory"), "pinned");
}

TEST(MemoryExport, PerfettoCountersSlicesAndOwnersAreTheModels) {
  exporter::ExportStats stats;
  const std::string bytes = ExportToString(MemoryTrace(), ExportFormat::kPerfetto, &stats);
  CheckPerfettoMemory(CheckPerfettoTrace(bytes));
  EXPECT_EQ(stats.allocation_lanes, 3u);  // two for A, one for B
  EXPECT_EQ(stats.allocations_not_drawn, 0u);
  EXPECT_EQ(stats.extra_lanes, 0u);  // allocation lanes are not overflow lanes
}

TEST(MemoryExport, PerfettoFromAnSbtFileIsTheSame) {
  // Streamed: the metadata (stacks, mappings) arrives through the reader.
  TempPath sbt(".sbt"), out(".pftrace");
  ASSERT_TRUE(format::WriteTraceFile(MemoryTrace(), sbt.path()).ok());
  auto s = exporter::ExportSbtFile(sbt.path(), ExportFormat::kPerfetto, out.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  CheckPerfettoMemory(CheckPerfettoTrace(ReadFileToString(out.path()).value()));
}

TEST(MemoryExport, PerfettoDecodesWithOfficialSchema) {
  if (std::system("protoc --version > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "protoc not installed (Debian package protobuf-compiler): schema check skipped";
  TempPath out(".pftrace"), decoded(".txt");
  ASSERT_TRUE(exporter::ExportTrace(MemoryTrace(), ExportFormat::kPerfetto, out.path()).ok());
  const std::string dir = SourceDir() + "/tests/export/data";
  const std::string cmd = "protoc --proto_path=" + dir + " --decode=perfetto.protos.Trace " + dir +
                          "/perfetto_trace.proto < " + out.path() + " > " + decoded.path() +
                          " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::string text = ReadFileToString(decoded.path()).value();
  ASSERT_EQ(rc, 0) << text.substr(0, 2000);
  EXPECT_NE(text.find("string_value: \"0x1000\""), std::string::npos);
  EXPECT_NE(text.find("\"Device memory in use: NCCL\""), std::string::npos);
  EXPECT_NE(text.find("unit: UNIT_SIZE_BYTES"), std::string::npos);
  // No field the schema does not know, at any depth.
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const size_t first = text.find_first_not_of(' ', pos);
    if (first < eol) {
      EXPECT_FALSE(std::isdigit(static_cast<unsigned char>(text[first])))
          << text.substr(pos, eol - pos);
    }
    pos = eol + 1;
  }
}

TEST(MemoryExport, PerfettoAllocationLanesAreCapped) {
  // 1030 allocations live at once: 1024 lanes, the rest counted and left
  // without a slice; the counter still has every byte.
  Trace t;
  for (uint64_t i = 0; i < 1030; ++i) {
    MemoryEvent m{};
    m.ts_ns = 1000 + i;
    m.pid = 1;
    m.op = kMemoryAlloc;
    m.address = 0x10000 * (i + 1);
    m.bytes = 4096;
    m.memory_kind = kMemDevice;
    t.Rows<MemoryEvent>().push_back(m);
  }
  exporter::ExportStats stats;
  PerfettoCheck c = CheckPerfettoTrace(ExportToString(t, ExportFormat::kPerfetto, &stats));
  ASSERT_TRUE(c.ok()) << c.Summary();
  EXPECT_EQ(stats.allocation_lanes, 1024u);
  EXPECT_EQ(stats.allocations_not_drawn, 6u);
  EXPECT_EQ(AllocationSlices(c).size(), 1024u);
  Series live = PerfettoCounter(c, 1, "Device memory in use");
  ASSERT_EQ(live.size(), 1030u);
  EXPECT_EQ(live.back().second, 1030u * 4096);
}

// ---- Chrome / Kineto JSON -------------------------------------------------------

// A JSON event's time in the trace's nanoseconds.
uint64_t JsonNs(const json& trace, const json& e) {
  return trace["baseTimeNanoseconds"].get<uint64_t>() +
         static_cast<uint64_t>(std::llround(e["ts"].get<double>() * 1000));
}

Series JsonCounter(const json& trace, const std::string& name, uint32_t row) {
  Series out;
  for (const auto& e : trace["traceEvents"])
    if (e.value("ph", "") == "C" && e.value("name", "") == name && e["pid"] == row)
      out.emplace_back(JsonNs(trace, e), e["args"]["bytes"].get<uint64_t>());
  return out;
}

TEST(MemoryExport, JsonCountersAndTorchMemoryEventsAreTheModels) {
  json j = json::parse(ExportToString(MemoryTrace(), ExportFormat::kJson, nullptr));
  EXPECT_EQ(j["profile_memory"], 1);
  // "C" counters per process and device, on the device's row (pid 0).
  EXPECT_EQ(JsonCounter(j, "Device memory in use (pid 100)", 0), kDeviceA);
  EXPECT_EQ(JsonCounter(j, "Device memory in use (pid 200)", 0), kDeviceB);
  EXPECT_EQ(JsonCounter(j, "Pinned host memory in use (pid 100)", 0), kPinnedA);

  // torch's [memory] instants: one per allocation and per free of known
  // memory; Total Allocated is the process's on that device type and id.
  struct Want {
    uint64_t ts;
    uint32_t pid, tid;
    int64_t bytes;
    uint64_t addr;
    int device_type, device_id;
    uint64_t total;
  };
  const std::vector<Want> want = {
      {1000, kA, 101, 1 * MiB, 0x1000, 1, 0, 1 * MiB},  // the thread of its call
      {2000, kA, kA, 256 * KiB, 0x2000, 1, 0, 1 * MiB + 256 * KiB},
      {3000, kB, kB, 512 * KiB, 0x1000, 1, 0, 512 * KiB},
      {4000, kA, kA, -256 * int64_t{KiB}, 0x2000, 1, 0, 1 * MiB},
      {5000, kA, kA, 128 * KiB, 0x3000, 1, 0, 1 * MiB + 128 * KiB},
      {7000, kA, kA, -1 * int64_t{MiB}, 0x1000, 1, 0, 128 * KiB},
      {9000, kA, kA, 2 * MiB, 0x55, 1, 0, 128 * KiB + 2 * MiB},
      {12000, kA, kA, -2 * int64_t{MiB}, 0x55, 1, 0, 128 * KiB},
      {14000, kB, kB, -512 * int64_t{KiB}, 0x1000, 1, 0, 0},
      {15000, kA, kA, 64 * KiB, 0x7000, 0, -1, 64 * KiB},  // pinned: CPU, as torch writes it
  };
  std::vector<const json*> got;
  for (const auto& e : j["traceEvents"])
    if (e.value("name", "") == "[memory]") got.push_back(&e);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const json& e = *got[i];
    const json& a = e["args"];
    EXPECT_EQ(JsonNs(j, e), want[i].ts);
    EXPECT_EQ(e["pid"], want[i].pid);
    EXPECT_EQ(e["tid"], want[i].tid);
    EXPECT_EQ(a["Bytes"].get<int64_t>(), want[i].bytes);
    EXPECT_EQ(a["Addr"].get<uint64_t>(), want[i].addr);
    EXPECT_EQ(a["Device Type"], want[i].device_type);
    EXPECT_EQ(a["Device Id"], want[i].device_id);
    EXPECT_EQ(a["Total Allocated"].get<uint64_t>(), want[i].total);
    EXPECT_EQ(a["Total Reserved"].get<uint64_t>(), want[i].total);
  }

  // The same keys and JSON types as a real torch.profiler(profile_memory=True)
  // trace's [memory] events (tests/export/data/torch_profiler_memory.json),
  // less torch's bookkeeping ("finished", "Ev Idx").
  json torch = json::parse(
      ReadFileToString(SourceDir() + "/tests/export/data/torch_profiler_memory.json").value());
  EXPECT_EQ(torch["profile_memory"], 1);
  ASSERT_FALSE(torch["traceEvents"].empty());
  auto types = [](const json& o, std::set<std::string> skip) {
    std::map<std::string, std::string> out;
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (skip.count(it.key())) continue;
      const json& v = *it;
      out[it.key()] = v.is_number_integer() ? "int"
                      : v.is_number()       ? "float"
                      : v.is_string()       ? "string"
                      : v.is_object()       ? "object"
                                            : "other";
    }
    return out;
  };
  for (const json& t : torch["traceEvents"]) {
    for (const json* o : got) {
      EXPECT_EQ(types(*o, {}), types(t, {}));
      EXPECT_EQ(types((*o)["args"], {}), types(t["args"], {"finished", "Ev Idx"}));
      EXPECT_EQ((*o)["ph"], t["ph"]);
      EXPECT_EQ((*o)["cat"], t["cat"]);
      EXPECT_EQ((*o)["s"], t["s"]);
    }
  }
}

// ---- SQLite ---------------------------------------------------------------------

TEST(MemoryExport, SqliteUsageRowsAreTheModels) {
  Trace t = MemoryTrace();
  TempPath db(".sqlite");
  auto s = exporter::ExportTrace(t, ExportFormat::kSqlite, db.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.path().c_str(), &h), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h,
                               "SELECT start, globalPid >> 24, deviceId, address, bytes, memKind, "
                               "memoryOperationType FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY "
                               "start",
                               -1, &st, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(h);
  using Row = std::tuple<uint64_t, uint32_t, uint32_t, uint64_t, uint64_t, int, int>;
  std::vector<Row> rows;
  while (sqlite3_step(st) == SQLITE_ROW) {
    rows.emplace_back(sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                      sqlite3_column_int(st, 2), sqlite3_column_int64(st, 3),
                      sqlite3_column_int64(st, 4), sqlite3_column_int(st, 5),
                      sqlite3_column_int(st, 6));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  // Times from the session start (the first event, at 900). nsys' memKind:
  // 2 device, 1 pinned; operation 0 allocation, 1 deallocation.
  const uint64_t t0 = 900;
  const std::vector<Row> want = {
      {1000 - t0, kA, 0, 0x1000, 1 * MiB, 2, 0},
      {2000 - t0, kA, 0, 0x2000, 256 * KiB, 2, 0},
      {3000 - t0, kB, 0, 0x1000, 512 * KiB, 2, 0},
      {4000 - t0, kA, 0, 0x2000, 256 * KiB, 2, 1},  // the allocation's size
      {5000 - t0, kA, 0, 0x3000, 128 * KiB, 2, 0},
      {6000 - t0, kA, 0, 0x9000, 4096, 2, 1},  // unknown memory: its own size
      {7000 - t0, kA, 0, 0x1000, 1 * MiB, 2, 1},
      // 8000 reserve, 10000 map, 11000 unmap, 13000 unreserve: no rows
      {9000 - t0, kA, 0, 0x55, 2 * MiB, 2, 0},   // cuMemCreate: address = handle
      {12000 - t0, kA, 0, 0x55, 2 * MiB, 2, 1},  // cuMemRelease: the creation's size
      {14000 - t0, kB, 0, 0x1000, 512 * KiB, 2, 1},
      {15000 - t0, kA, 0, 0x7000, 64 * KiB, 1, 0},
  };
  EXPECT_EQ(rows, want);

  // Memory in use as SQL on an nsys export computes it (allocations minus
  // the frees that match one, per process, device and memory kind) is the
  // model's at every row.
  std::map<std::tuple<uint32_t, uint32_t, int>, uint64_t> live;
  std::set<std::pair<uint32_t, uint64_t>> allocated;
  std::map<std::pair<uint32_t, int>, Series> series;
  for (const auto& [start, pid, device, address, bytes, kind, op] : rows) {
    uint64_t& l = live[{pid, device, kind}];
    if (op == 0) {
      allocated.insert({pid, address});
      l += bytes;
    } else if (allocated.erase({pid, address})) {
      l -= bytes;
    } else {
      continue;
    }
    series[{pid, kind}].emplace_back(start + t0, l);
  }
  EXPECT_EQ((series[{kA, 2}]), kDeviceA);
  EXPECT_EQ((series[{kB, 2}]), kDeviceB);
  EXPECT_EQ((series[{kA, 1}]), kPinnedA);
}

}  // namespace
}  // namespace tracesmith
