// Correlation-id sets of the exporters (src/export/id_set.h): dense ids stay
// a bitset; a forged id far beyond them costs one entry, so a tiny trace
// with correlation id 2^32-1 in 30 processes exports in a few MB (it took
// 16 GB with bitsets sized by the largest id: issue #21 item 6).
#include "export/id_set.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

TEST(IdSet, DenseIdsAreABitsetFarIdsAnEntry) {
  IdSet s;
  for (uint32_t id = 1; id <= 200000; ++id) s.Insert(id);
  s.Insert(0xffffffffu);
  s.Insert(0x80000000u);
  for (uint32_t id = 1; id <= 200000; ++id) ASSERT_TRUE(s.Contains(id)) << id;
  EXPECT_FALSE(s.Contains(0));
  EXPECT_FALSE(s.Contains(200001));
  EXPECT_TRUE(s.Contains(0xffffffffu));
  EXPECT_TRUE(s.Contains(0x80000000u));
  EXPECT_FALSE(s.Contains(0xfffffffeu));
  EXPECT_LT(s.memory_bytes(), size_t{1} << 20);  // not 512 MiB
}

TEST(IdMap, DenseIdsAreAVectorFarIdsAnEntry) {
  IdMap m;
  for (uint32_t id = 1; id <= 200000; ++id) m.Set(id, id * 3ull);
  m.Set(0xffffffffu, 7);
  m.Set(0x80000000u, 9);
  for (uint32_t id = 1; id <= 200000; ++id) ASSERT_EQ(m.Get(id), id * 3ull) << id;
  EXPECT_EQ(m.Get(0), 0u);
  EXPECT_EQ(m.Get(200001), 0u);
  EXPECT_EQ(m.Get(0xffffffffu), 7u);
  EXPECT_EQ(m.Get(0x80000000u), 9u);
  EXPECT_EQ(m.Get(0xfffffffeu), 0u);
  EXPECT_LT(m.memory_bytes(), size_t{8} << 20);  // not 32 GiB
}

TEST(IdMap, AnIdFirstKeptApartIsStillFoundOnceTheVectorCoversIt) {
  IdMap m;
  m.Set(3000000, 42);  // far ahead of everything: kept apart
  for (uint32_t id = 1; id < 3000000; ++id) m.Set(id, 1);
  EXPECT_EQ(m.Get(3000000), 42u);
  m.Set(3000000, 43);  // now in the vector: overwritten there
  EXPECT_EQ(m.Get(3000000), 43u);
  EXPECT_EQ(m.Get(3000001), 0u);
}

TEST(IdSet, AnIdFirstKeptApartIsStillFoundOnceTheBitsetCoversIt) {
  IdSet s;
  s.Insert(5000000);                                        // far ahead of everything: kept apart
  for (uint32_t id = 1; id <= 5000001; ++id) s.Insert(id);  // the bitset grows over it
  EXPECT_TRUE(s.Contains(5000000));
  EXPECT_TRUE(s.Contains(5000001));
  EXPECT_FALSE(s.Contains(5000002));
}

// The process's peak RSS in KiB since the last ResetPeakRssKb(). The
// high-water mark is reset to the current RSS first (/proc/self/clear_refs,
// "5": Linux 4.0+): what earlier tests of the same process used (under ASan a
// whole test binary runs in one process) would otherwise hide this test's
// growth. ResetPeakRssKb returns the RSS it reset to, or -1 where it cannot.
long PeakRssKb() {
  auto read = ReadFileToString("/proc/self/status");
  const std::string status = read.ok() ? *read : "";
  const size_t at = status.find("VmHWM:");
  return at == std::string::npos ? -1 : std::strtol(status.c_str() + at + 6, nullptr, 10);
}
long ResetPeakRssKb() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  const bool reset = f != nullptr && std::fputs("5", f) >= 0;
  if (f != nullptr && std::fclose(f) != 0) return -1;
  return reset ? PeakRssKb() : -1;
}
// Peak RSS added since `before` (ResetPeakRssKb) stays under 256 MiB.
void ExpectPeakGrowthUnder256MiB(long before) {
  if (before < 0) {
    std::printf("peak RSS not checked: /proc/self/clear_refs cannot be written here\n");
    return;
  }
  EXPECT_LT(PeakRssKb() - before, 256 * 1024) << "KiB of peak RSS added by the exports";
}

// One launch call and its kernel in each of processes 1..`processes`, both
// with correlation id `corr`; the calls' external ids are 100 + pid when
// `external` (0 otherwise).
Trace OneLaunchPerProcess(uint32_t processes, uint32_t corr, bool external) {
  Trace t;
  for (uint32_t pid = 1; pid <= processes; ++pid) {
    ApiEvent a{};
    a.pid = pid;
    a.start_ns = 1000 * pid;
    a.end_ns = a.start_ns + 10;
    a.correlation_id = corr;
    a.external_id = external ? 100 + pid : 0;
    t.Rows<ApiEvent>().push_back(a);
    KernelEvent k{};
    k.pid = pid;
    k.start_ns = a.start_ns + 20;
    k.end_ns = k.start_ns + 5;
    k.correlation_id = corr;
    t.Rows<KernelEvent>().push_back(k);
  }
  return t;
}

TEST(ExportMemory, ForgedCorrelationIdsInManyProcessesStaySmall) {
  const Trace t = OneLaunchPerProcess(30, 0xffffffffu, /*external=*/false);
  const long before = ResetPeakRssKb();
  for (ExportFormat f : {ExportFormat::kJson, ExportFormat::kPerfetto}) {
    testing::TempPath out(f == ExportFormat::kJson ? ".json" : ".pftrace");
    auto s = ExportTrace(t, f, out.path(), ExportOptions{});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    if (f != ExportFormat::kJson) continue;
    auto doc = nlohmann::json::parse(ReadFileToString(out.path()).value());
    int starts = 0, ends = 0;
    for (const auto& e : doc["traceEvents"]) {
      starts += e.value("ph", "") == "s";
      ends += e.value("ph", "") == "f";
    }
    EXPECT_EQ(starts, 30);  // every process's launch still gets its arrow
    EXPECT_EQ(ends, 30);
  }
  ExpectPeakGrowthUnder256MiB(before);
}

// Issue #41 item 5: `export -f json` of an API row with correlation id
// 2^32-1 and an external id crashed (the id + 1 wrapped in 32 bits), and at
// 2^31 it took 16.8 GB. Every exporter, both ids, external ids set.
TEST(ExportMemory, FarCorrelationIdsWithExternalIdsExportInEveryFormat) {
  for (uint32_t corr : {0x80000000u, 0xffffffffu}) {
    const Trace t = OneLaunchPerProcess(3, corr, /*external=*/true);
    const long before = ResetPeakRssKb();
    // Every format export/ writes, from the trace in memory and from an SBT
    // file (dot is written from files only; folded belongs to report/).
    testing::TempPath sbt(".sbt");
    ASSERT_TRUE(format::WriteTraceFile(t, sbt.path()).ok());
    for (ExportFormat f : {ExportFormat::kPerfetto, ExportFormat::kJson, ExportFormat::kSqlite,
                           ExportFormat::kCsv, ExportFormat::kDot}) {
      SCOPED_TRACE(std::string(ExportFormatName(f)) + " at " + std::to_string(corr));
      testing::TempPath out(ExportFormatExtension(f, false));
      if (f != ExportFormat::kDot) {
        auto s = ExportTrace(t, f, out.path(), ExportOptions{});
        ASSERT_TRUE(s.ok()) << s.status().ToString();
      }
      testing::TempPath out_file(ExportFormatExtension(f, false));
      auto s = ExportSbtFile(sbt.path(), f, out_file.path(), ExportOptions{});
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      if (f != ExportFormat::kJson) continue;
      auto doc = nlohmann::json::parse(ReadFileToString(out_file.path()).value());
      std::vector<uint64_t> kernel_external;
      for (const auto& e : doc["traceEvents"])
        if (e.value("cat", "") == "kernel") kernel_external.push_back(e["args"]["External id"]);
      std::sort(kernel_external.begin(), kernel_external.end());
      EXPECT_EQ(kernel_external, (std::vector<uint64_t>{101, 102, 103}));  // each its own call's
    }
    ExpectPeakGrowthUnder256MiB(before);
  }
}

}  // namespace
}  // namespace tracesmith::exporter
