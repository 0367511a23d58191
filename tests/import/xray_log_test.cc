// XRay log decoding on hand-built logs (every FDR record kind, version 1
// buffers, ring-ordered buffers, unmatched calls, damage) and on the real
// fixtures cut at every point.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <tuple>

#include "import/import_data.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/import/xray.h"

namespace tracesmith::importer {
namespace {

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string Header(uint16_t version, uint16_t type, uint64_t freq, uint64_t free_form = 0) {
  std::string h;
  Put<uint16_t>(&h, version);
  Put<uint16_t>(&h, type);
  Put<uint32_t>(&h, 3);  // constant + nonstop TSC
  Put<uint64_t>(&h, freq);
  Put<uint64_t>(&h, free_form);
  Put<uint64_t>(&h, 0);
  return h;
}

// A 16-byte FDR metadata record; `data` is up to 15 bytes.
std::string Meta(uint8_t kind, const std::string& data = "") {
  std::string m(1, static_cast<char>(kind << 1 | 1));
  m += data;
  m.resize(16, '\0');
  return m;
}
template <typename... T>
std::string Fields(T... v) {
  std::string s;
  (Put(&s, v), ...);
  return s;
}
std::string NewBuffer(int32_t tid) { return Meta(0, Fields(tid)); }
std::string NewCpu(uint16_t cpu, uint64_t tsc) { return Meta(2, Fields(cpu, tsc)); }
std::string Pid(int32_t pid) { return Meta(9, Fields(pid)); }
// An 8-byte FDR function record: kind 0 enter, 1 exit, 2 tail exit, 3 enter with args.
std::string Fn(uint8_t kind, uint32_t id, uint32_t delta) {
  return Fields<uint32_t, uint32_t>(id << 4 | kind << 1, delta);
}
// Version 2+: a buffer is a BufferExtents record and the bytes it counts.
std::string Buffer(const std::string& records) {
  return Meta(7, Fields<uint64_t>(records.size())) + records;
}

using Range =
    std::tuple<uint32_t, std::string, uint64_t, uint64_t, uint8_t>;  // tid name start end depth

std::vector<Range> Ranges(const model::Trace& t) {
  std::vector<Range> out;
  for (const auto& r : t.Rows<model::NvtxRangeEvent>())
    out.emplace_back(r.tid, std::string(t.strings.Get(r.name_id)), r.start_ns, r.end_ns, r.depth);
  return out;
}

TEST(XRayFdr, DecodesEveryRecordKind) {
  // 2 GHz: ns = TSC / 2.
  std::string log = Header(5, 1, 2'000'000'000) +
                    Buffer(NewBuffer(7) + Meta(4, Fields<uint64_t, uint32_t>(1700000000, 5)) +
                           Pid(42) + NewCpu(1, 1000) + Fn(3, 1, 0) + Meta(6, Fields<uint64_t>(99)) +
                           Fn(0, 2, 100) + Meta(5, Fields<int32_t, int32_t>(3, 10)) + "abc" +
                           Fn(1, 2, 50) + Meta(8, Fields<int32_t, int32_t, uint16_t>(2, 4, 7)) +
                           "xy" + Meta(3, Fields<uint64_t>(10'000)) + Fn(2, 1, 20));
  ImportStats stats;
  auto t = ImportXRayLog(log, nullptr, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(stats.damage, "");
  EXPECT_EQ(stats.skipped, 3u);  // call argument, custom event, typed event
  ASSERT_EQ(stats.warnings.size(), 1u);
  EXPECT_NE(stats.warnings[0].find("--binary"), std::string::npos);
  // function#2: enter at 1100, custom event +10, exit +50 -> 1160. function#1
  // ends (tail exit) 20 ticks after the TSC wrap to 10000.
  EXPECT_EQ(Ranges(*t),
            (std::vector<Range>{{7, "function#1", 500, 5010, 0}, {7, "function#2", 550, 580, 1}}));
  ASSERT_EQ(t->Rows<model::NvtxRangeEvent>().size(), 2u);
  EXPECT_EQ(t->Rows<model::NvtxRangeEvent>()[0].pid, 42u);
  EXPECT_EQ(t->strings.Get(t->Rows<model::NvtxRangeEvent>()[0].domain_id), "xray");
  ASSERT_EQ(t->Rows<model::Thread>().size(), 1u);
  EXPECT_EQ(t->Rows<model::Thread>()[0].tid, 7u);
}

TEST(XRayFdr, OrdersAThreadsBuffersByTime) {
  // The ring writes the later buffer first; the call spans both.
  std::string later = Buffer(NewBuffer(5) + Pid(1) + NewCpu(0, 9000) + Fn(1, 3, 0));
  std::string earlier = Buffer(NewBuffer(5) + Pid(1) + NewCpu(0, 1000) + Fn(0, 3, 0));
  ImportStats stats;
  auto t = ImportXRayLog(Header(5, 1, 1'000'000'000) + later + earlier, nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(Ranges(*t), (std::vector<Range>{{5, "function#3", 1000, 9000, 0}}));
  EXPECT_EQ(stats.unmatched_entries + stats.unmatched_exits, 0u);
}

TEST(XRayFdr, CountsUnmatchedEntriesAndExits) {
  std::string records = NewBuffer(1) + NewCpu(0, 100) + Fn(1, 9, 0)  // exit with no entry
                        + Fn(0, 1, 10) + Fn(0, 2, 10)                // f2's exit is lost
                        + Fn(1, 1, 10)                               // closes f2 and f1
                        + Fn(0, 4, 10);                              // open at the end
  ImportStats stats;
  auto t = ImportXRayLog(Header(5, 1, 1'000'000'000) + Buffer(records), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.unmatched_exits, 1u);
  EXPECT_EQ(stats.unmatched_entries, 2u);
  EXPECT_EQ(Ranges(*t),
            (std::vector<Range>{{1, "function#1", 110, 130, 0}, {1, "function#2", 120, 130, 1}}));
}

// Entries and exits that never pair: every exit looks for its function's
// frame in a deep stack. The work must stay linear (it was quadratic: 800k
// records took 144 s, these 600k about 20 s).
TEST(XRayFdr, UnpairedCallsImportInLinearTime) {
  const int kPairs = 300'000;
  std::string records = NewBuffer(1) + NewCpu(0, 100);
  records.reserve(records.size() + 2 * kPairs * 8);
  for (int i = 0; i < kPairs; ++i) records += Fn(0, 1, 1);  // enter f1 ...
  for (int i = 0; i < kPairs; ++i) records += Fn(1, 2, 1);  // ... exit f2
  const std::string log = Header(5, 1, 1'000'000'000) + Buffer(records);
  ImportStats stats;
  const auto begin = std::chrono::steady_clock::now();
  auto t = ImportXRayLog(log, nullptr, &stats);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ASSERT_TRUE(t.ok());
  EXPECT_LT(seconds, 3.0) << "call matching is not linear in the records";
  EXPECT_EQ(stats.unmatched_exits, uint64_t{kPairs});
  EXPECT_EQ(stats.unmatched_entries, uint64_t{kPairs});
  EXPECT_TRUE(Ranges(*t).empty());
}

// An exit closes the nearest open frame of its function, and every frame
// above it (their exits were lost), at its time.
TEST(XRayFdr, ExitClosesTheNearestFrameOfItsFunction) {
  std::string records = NewBuffer(1) + NewCpu(0, 100);
  records += Fn(0, 1, 0) + Fn(0, 2, 10) + Fn(0, 1, 10) + Fn(0, 3, 10);  // enter f1 f2 f1 f3
  records += Fn(1, 1, 10);  // closes f3 and the inner f1
  records += Fn(1, 9, 10);  // no frame
  records += Fn(2, 1, 10);  // tail exit: closes f2 and the outer f1
  records += Fn(1, 2, 10);  // f2 was closed: no frame
  ImportStats stats;
  auto t = ImportXRayLog(Header(5, 1, 1'000'000'000) + Buffer(records), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.unmatched_exits, 2u);
  EXPECT_EQ(stats.unmatched_entries, 2u);
  EXPECT_EQ(Ranges(*t), (std::vector<Range>{{1, "function#1", 100, 160, 0},
                                            {1, "function#2", 110, 160, 1},
                                            {1, "function#1", 120, 140, 2},
                                            {1, "function#3", 130, 140, 3}}));
}

TEST(XRayFdr, Version1BuffersEndAtEndOfBuffer) {
  const size_t kBufferBytes = 96;
  auto buffer = [&](int32_t tid, uint64_t tsc) {
    std::string b = NewBuffer(tid) + NewCpu(0, tsc) + Fn(0, 1, 0) + Fn(1, 1, 5) + Meta(1);
    b.resize(kBufferBytes, '\xff');  // unused rest of the fixed-size buffer
    return b;
  };
  ImportStats stats;
  auto t = ImportXRayLog(
      Header(1, 1, 1'000'000'000, kBufferBytes) + buffer(1, 100) + buffer(2, 200), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.damage, "");
  EXPECT_EQ(Ranges(*t),
            (std::vector<Range>{{1, "function#1", 100, 105, 0}, {2, "function#1", 200, 205, 0}}));
}

TEST(XRayFdr, DamageNamesTheOffsetAndKeepsThePrefix) {
  std::string records = NewBuffer(1) + NewCpu(0, 100) + Fn(0, 1, 0) + Fn(1, 1, 5);
  const size_t bad_at = 32 + 16 + records.size();
  records += Meta(12) + Fn(0, 2, 0) + Fn(1, 2, 5);
  ImportStats stats;
  auto t = ImportXRayLog(Header(5, 1, 1'000'000'000) + Buffer(records), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.damage, StrFormat("byte %zu: unexpected metadata record kind 12", bad_at));
  EXPECT_EQ(Ranges(*t), (std::vector<Range>{{1, "function#1", 100, 105, 0}}));
  // An event payload longer than its buffer.
  stats = {};
  std::string overrun = NewBuffer(1) + NewCpu(0, 1) + Meta(5, Fields<int32_t, int32_t>(1000, 0));
  t = ImportXRayLog(Header(5, 1, 1) + Buffer(overrun), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.damage,
            "byte 80: custom event payload of 1000 bytes overruns its buffer (0 "
            "bytes left)");
}

TEST(XRayLog, HeaderErrors) {
  EXPECT_EQ(ImportXRayLog(Header(5, 1, 1).substr(0, 20), nullptr).status().code(),
            StatusCode::kDataLoss);
  auto v9 = ImportXRayLog(Header(9, 1, 1), nullptr);
  EXPECT_EQ(v9.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(v9.status().message().find("byte 0: XRay log version 9"), std::string::npos);
  EXPECT_EQ(ImportXRayLog(Header(3, 4, 1), nullptr).status().code(), StatusCode::kInvalidArgument);
}

TEST(XRayLog, DetectsBothModesByHeader) {
  auto basic = DetectImportFormat(ReadData("xray_basic.log").substr(0, 64));
  ASSERT_TRUE(basic.ok());
  EXPECT_EQ(*basic, ImportFormat::kXRayBasic);
  auto fdr = DetectImportFormat(ReadData("xray_fdr.log").substr(0, 64));
  ASSERT_TRUE(fdr.ok());
  EXPECT_EQ(*fdr, ImportFormat::kXRayFdr);
  EXPECT_STREQ(ImportFormatName(*fdr), "xray-fdr");
  EXPECT_EQ(DetectImportFormat(Header(5, 1, 1).substr(0, 10)).status().code(),
            StatusCode::kDataLoss);
  EXPECT_FALSE(DetectImportFormat(Header(5, 7, 1)).ok());  // not a known type: not XRay
  auto json = DetectImportFormat(" {\"traceEvents\": []}");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, ImportFormat::kKinetoJson);

  // ImportFile: detection, then names from the binary.
  ImportFormat detected;
  ImportStats stats;
  auto t = ImportFile(DataPath("xray_fdr.log"), {.xray_binary = DataPath("xray_prog.instrmap")},
                      &detected, &stats);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(detected, ImportFormat::kXRayFdr);
  std::set<std::string> names;
  for (const auto& r : t->Rows<model::NvtxRangeEvent>())
    names.insert(std::string(t->strings.Get(r.name_id)));
  EXPECT_TRUE(names.count("demo::Worker::Step(int)"));
  EXPECT_TRUE(names.count("Twice(int)"));
  auto missing = ImportFile(DataPath("xray_fdr.log"), {.xray_binary = DataPath("missing")});
  EXPECT_FALSE(missing.ok());
}

TEST(XRayLog, RealLogsWithoutBinaryUseFunctionIds) {
  ImportStats stats;
  auto t = ImportXRayLog(ReadData("xray_basic.log"), nullptr, &stats);
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(t->Rows<model::NvtxRangeEvent>().empty());
  for (const auto& r : t->Rows<model::NvtxRangeEvent>())
    EXPECT_TRUE(t->strings.Get(r.name_id).starts_with("function#"));
  ASSERT_EQ(stats.warnings.size(), 1u);
}

// A log cut anywhere imports without error, says where, and keeps exactly the
// calls that ended before the cut.
TEST(XRayLog, CutLogsKeepTheirPrefix) {
  auto map = LoadXRayInstrMap(DataPath("xray_prog.instrmap"));
  ASSERT_TRUE(map.ok());
  for (const char* name : {"xray_basic.log", "xray_fdr.log"}) {
    const std::string log = ReadData(name);
    auto full = ImportXRayLog(log, &*map);
    ASSERT_TRUE(full.ok());
    const auto all = Ranges(*full);
    const std::set<Range> all_set(all.begin(), all.end());
    size_t damaged = 0;
    for (size_t cut = 32; cut < log.size(); cut += 5) {
      ImportStats stats;
      auto t = ImportXRayLog(std::string_view(log).substr(0, cut), &*map, &stats);
      ASSERT_TRUE(t.ok()) << name << " cut at " << cut << ": " << t.status().ToString();
      for (const Range& r : Ranges(*t))
        ASSERT_TRUE(all_set.count(r)) << name << " cut at " << cut << ": " << std::get<1>(r);
      if (!stats.damage.empty()) {
        ++damaged;
        ASSERT_TRUE(stats.damage.starts_with("byte ")) << stats.damage;
        ASSERT_LE(std::stoul(stats.damage.substr(5)), cut) << stats.damage;
      }
    }
    EXPECT_GT(damaged, (log.size() - 32) / 5 / 2) << name;
  }
  // Basic mode: the partial record is named exactly.
  const std::string basic = ReadData("xray_basic.log");
  ImportStats stats;
  auto t = ImportXRayLog(std::string_view(basic).substr(0, 32 + 32 * 50 + 5), &*map, &stats);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(stats.damage, "byte 1632: basic-mode record cut short (32 bytes needed, 5 left)");
  EXPECT_FALSE(t->Rows<model::NvtxRangeEvent>().empty());
}

}  // namespace
}  // namespace tracesmith::importer
