// Damaged input: truncation at every byte, random bit flips, hostile headers.
// The reader must return a clean error or a recovered prefix, never crash.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "testing/random_records.h"
#include "testing/sbt_forge.h"
#include "testing/temp_file.h"
#include "tracesmith/base/bytes.h"
#include "tracesmith/base/crc32c.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

using model::ForEachRecordType;
using model::Trace;

std::vector<uint8_t> Serialize(const Trace& t, SbtWriterOptions opts) {
  testing::TempPath tmp;
  EXPECT_TRUE(WriteTraceFile(t, tmp.path(), opts).ok());
  auto s = ReadFileToString(tmp.path());
  return std::vector<uint8_t>(s->begin(), s->end());
}

// Decodes `bytes`; returns false when Open refused the input (a clean error).
bool Decode(std::span<const uint8_t> bytes, Trace* out, ReadReport* report) {
  auto r = SbtReader::FromMemory(bytes);
  if (!r.ok()) {
    EXPECT_FALSE(r.status().message().empty());
    return false;
  }
  EXPECT_TRUE((*r)->ReadAll(out, {.max_decoded_bytes = 64u << 20}).ok());
  *report = (*r)->report();
  return true;
}

// Every kind's recovered rows are a prefix of the original rows.
void ExpectPrefixOf(const Trace& got, const Trace& full) {
  ForEachRecordType([&]<typename T>() {
    const auto& g = got.Rows<T>();
    const auto& f = full.Rows<T>();
    ASSERT_LE(g.size(), f.size());
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_TRUE(g[i] == f[i]) << model::RecordTraits<T>::kLabel;
  });
}

Trace SmallTrace() { return testing::RandomTrace(42, 12); }

TEST(CorruptionTest, TruncationAtEveryByteRecoversAPrefix) {
  for (int level : {0, 3}) {
    Trace full = SmallTrace();
    std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = level, .rows_per_chunk = 5});
    size_t last_events = 0;
    for (size_t len = 0; len <= bytes.size(); ++len) {
      Trace got;
      ReadReport report;
      if (!Decode(std::span(bytes.data(), len), &got, &report)) {
        ASSERT_LT(len, kFileHeaderSize) << "only a cut header may be refused";
        continue;
      }
      ExpectPrefixOf(got, full);
      // Cutting more never recovers more.
      ASSERT_GE(got.EventCount(), last_events) << len;
      last_events = got.EventCount();
      if (len < bytes.size()) {
        // A cut on a chunk boundary loses no bytes but the file is unfinished.
        ASSERT_TRUE(!report.clean() || !report.indexed)
            << "truncation at " << len << " went unreported";
        if (!report.clean()) {
          ASSERT_LE(report.damage.back().offset, len);
        }
      } else {
        ASSERT_TRUE(report.clean()) << report.Describe();
        ASSERT_EQ(got.EventCount(), full.EventCount());
      }
    }
  }
}

TEST(CorruptionTest, RandomBitFlipsNeverCrash) {
  Trace full = SmallTrace();
  std::vector<uint8_t> clean = Serialize(full, {.zstd_level = 3, .rows_per_chunk = 5});
  std::mt19937_64 rng(1234);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bytes = clean;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bytes[rng() % bytes.size()] ^= uint8_t(1u << (rng() % 8));
    Trace got;
    ReadReport report;
    if (!Decode(bytes, &got, &report)) continue;
    if (report.clean()) {
      // Every byte is under a checksum or checked against one (the trailer
      // against the index it points at): no change goes unnoticed.
      ASSERT_TRUE(bytes == clean) << "iteration " << iter << ": a change went unreported";
      ASSERT_EQ(got.EventCount(), full.EventCount()) << "iteration " << iter;
    }
    ForEachRecordType(
        [&]<typename T>() { ASSERT_LE(got.Rows<T>().size(), full.Rows<T>().size()); });
  }
}

// Builds a chunk with valid checksums around an arbitrary payload.
std::vector<uint8_t> MakeChunk(uint16_t type, const ByteWriter& payload) {
  ByteWriter h;
  h.PutU32(kChunkMagic);
  h.PutU16(type);
  h.PutU16(0);
  h.PutU32(static_cast<uint32_t>(payload.size()));
  h.PutU32(static_cast<uint32_t>(payload.size()));
  h.PutU32(Crc32c(payload.data(), payload.size()));
  h.PutU32(Crc32c(h.data(), h.size()));
  h.PutBytes(payload.data(), payload.size());
  return h.buffer();
}

std::vector<uint8_t> HeaderOnly(uint16_t major) {
  ByteWriter h;
  h.PutBytes(kFileMagic, 8);
  h.PutU16(major);
  h.PutU16(0);
  h.PutU32(0);
  h.PutU32(0);
  h.PutU32(Crc32c(h.data(), h.size()));
  return h.buffer();
}

TEST(CorruptionTest, UnknownChunkTypesAndKindsAreSkipped) {
  std::vector<uint8_t> file = HeaderOnly(1);
  ByteWriter future;
  future.PutBytes("replay payload from the future", 30);
  auto c1 = MakeChunk(0x55, future);
  ByteWriter table;
  table.PutU16(999);  // unknown table kind
  table.PutVarint(3);
  auto c2 = MakeChunk(uint16_t(ChunkType::kTable), table);
  file.insert(file.end(), c1.begin(), c1.end());
  file.insert(file.end(), c2.begin(), c2.end());
  Trace t;
  t.Rows<model::KernelEvent>().push_back({.start_ns = 5, .end_ns = 9});
  std::vector<uint8_t> real = Serialize(t, {.zstd_level = 0});
  // Append the real file's chunks (without its header and trailer/index).
  auto r = SbtReader::FromMemory(real);
  ASSERT_TRUE(r.ok());
  for (const auto& c : (*r)->chunks()) {
    uint32_t len;
    std::memcpy(&len, real.data() + c.offset + 8, 4);
    file.insert(file.end(), real.begin() + c.offset, real.begin() + c.offset + 24 + len);
  }
  Trace got;
  ReadReport report;
  ASSERT_TRUE(Decode(file, &got, &report));
  EXPECT_TRUE(report.clean()) << report.Describe();
  EXPECT_EQ(report.chunks_skipped_unknown, 2u);
  ASSERT_EQ(got.Rows<model::KernelEvent>().size(), 1u);
  EXPECT_EQ(got.Rows<model::KernelEvent>()[0].end_ns, 9u);
}

TEST(CorruptionTest, NewerMajorVersionIsRefusedClearly) {
  auto file = HeaderOnly(2);
  auto r = SbtReader::FromMemory(file);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("newer TraceSmith"), std::string::npos);
}

TEST(CorruptionTest, NotAnSbtFile) {
  std::string text = "{\"traceEvents\": []}                               ";
  auto r =
      SbtReader::FromMemory(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not an SBT"), std::string::npos);
}

TEST(CorruptionTest, HostileRowCountIsRejectedBeforeAllocation) {
  std::vector<uint8_t> file = HeaderOnly(1);
  ByteWriter table;
  table.PutU16(uint16_t(model::TableKind::kKernel));
  table.PutVarint(1ull << 40);  // rows
  table.PutVarint(1);
  table.PutVarint(0);
  auto c = MakeChunk(uint16_t(ChunkType::kTable), table);
  file.insert(file.end(), c.begin(), c.end());
  Trace got;
  ReadReport report;
  ASSERT_TRUE(Decode(file, &got, &report));
  ASSERT_EQ(report.damage.size(), 1u);
  EXPECT_NE(report.damage[0].what.find("row count"), std::string::npos) << report.Describe();
  EXPECT_EQ(report.damage[0].offset, kFileHeaderSize);
}

// A footer index whose checksums are valid but whose row counts are forged
// (rows * sizeof(row) overflows) must not reach an allocation: the reader
// falls back to scanning the chunks and still reads every row.
TEST(CorruptionTest, ForgedIndexRowCountsNeverReachAnAllocation) {
  Trace full = SmallTrace();
  const std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = 0, .rows_per_chunk = 5});
  for (uint64_t rows :
       {uint64_t{1} << 63, uint64_t{1} << 58, ~uint64_t{0}, uint64_t{kMaxRowsPerChunk} + 1}) {
    const std::vector<uint8_t> forged = testing::ForgeIndexRows(bytes, rows);
    ASSERT_FALSE(forged.empty());
    for (uint64_t budget : {uint64_t{0}, uint64_t{64} << 20}) {
      auto r = SbtReader::FromMemory(forged);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      Trace got;
      ASSERT_TRUE((*r)->ReadAll(&got, {.max_decoded_bytes = budget}).ok());
      EXPECT_FALSE((*r)->report().indexed) << "a forged index is not used";
      EXPECT_EQ(got.EventCount(), full.EventCount());
      ExpectPrefixOf(got, full);
      size_t streamed = 0;
      ASSERT_TRUE((*r)->Stream([&](const Trace& batch, model::TableKind) {
                        streamed += batch.EventCount();
                        return OkStatus();
                      })
                      .ok());
      EXPECT_EQ(streamed, full.EventCount());
    }
  }
}

TEST(CorruptionTest, CorruptHeaderResynchronisesOnNextChunk) {
  Trace full = SmallTrace();
  std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = 0, .rows_per_chunk = 5});
  bytes[kFileHeaderSize + 2] ^= 0xff;         // first chunk's magic
  bytes.resize(bytes.size() - kTrailerSize);  // force a scan
  Trace got;
  ReadReport report;
  ASSERT_TRUE(Decode(bytes, &got, &report));
  ASSERT_FALSE(report.clean());
  EXPECT_EQ(report.damage[0].offset, kFileHeaderSize);
  EXPECT_NE(report.damage[0].what.find("corrupt chunk header"), std::string::npos);
  EXPECT_GT(got.EventCount(), full.EventCount() / 2);
}

// A finished file (index and trailer written) whose footer index or trailer
// is corrupt is damaged, not unfinished: every chunk is still found by
// scanning, and the footer's bytes are reported.
TEST(CorruptionTest, DamagedFooterIsDamageNotAnUnfinishedFile) {
  Trace full = SmallTrace();
  const std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = 0, .rows_per_chunk = 5});
  uint64_t index_offset = 0;
  std::memcpy(&index_offset, bytes.data() + bytes.size() - kTrailerSize, 8);
  ASSERT_LT(index_offset, bytes.size());
  const std::pair<const char*, size_t> kFlips[] = {
      {"trailer: index offset", bytes.size() - kTrailerSize},
      {"trailer: magic", bytes.size() - 3},
      {"index payload", index_offset + kChunkHeaderSize + 1},
      {"index chunk header", index_offset + 6},
  };
  for (auto [what, at] : kFlips) {
    SCOPED_TRACE(what);
    std::vector<uint8_t> damaged = bytes;
    damaged[at] ^= 0x10;
    Trace got;
    ReadReport report;
    ASSERT_TRUE(Decode(damaged, &got, &report));
    EXPECT_FALSE(report.indexed);
    EXPECT_TRUE(report.index_damaged);
    ASSERT_FALSE(report.clean());
    EXPECT_EQ(report.damage.back().offset, index_offset) << report.Describe();
    EXPECT_EQ(report.events_lost, 0u);
    EXPECT_EQ(got.EventCount(), full.EventCount());
  }
  // Cut where the index starts: the writer stopped; unfinished, not damaged.
  Trace got;
  ReadReport report;
  ASSERT_TRUE(Decode(std::span(bytes.data(), index_offset), &got, &report));
  EXPECT_TRUE(report.clean()) << report.Describe();
  EXPECT_FALSE(report.indexed);
  EXPECT_FALSE(report.index_damaged);
  EXPECT_EQ(got.EventCount(), full.EventCount());
}

// A damaged chunk of an indexed file: the damage says how many rows of which
// kind the index lists for it, and the report counts the events skipped, in
// ReadAll and in Stream alike.
TEST(CorruptionTest, DamagedChunkSaysWhatTheIndexListedInIt) {
  Trace full = SmallTrace();
  std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = 0, .rows_per_chunk = 5});
  ChunkIndexEntry chunk;
  {
    auto r = SbtReader::FromMemory(bytes);
    ASSERT_TRUE(r.ok());
    for (const ChunkIndexEntry& e : (*r)->chunks())
      if (e.type == uint16_t(ChunkType::kTable) &&
          e.table_kind == uint16_t(model::TableKind::kKernel)) {
        chunk = e;
        break;
      }
  }
  ASSERT_GT(chunk.rows, 0u);
  bytes[chunk.offset + kChunkHeaderSize + 2] ^= 0x01;
  const std::string skipped =
      StrFormat("(%llu kernel events skipped)", static_cast<unsigned long long>(chunk.rows));
  Trace got;
  ReadReport report;
  ASSERT_TRUE(Decode(bytes, &got, &report));
  ASSERT_EQ(report.damage.size(), 1u) << report.Describe();
  EXPECT_EQ(report.damage[0].offset, chunk.offset);
  EXPECT_NE(report.damage[0].what.find("payload checksum mismatch " + skipped), std::string::npos)
      << report.Describe();
  EXPECT_EQ(report.events_lost, chunk.rows);
  EXPECT_EQ(got.EventCount() + chunk.rows, full.EventCount());

  auto r = SbtReader::FromMemory(bytes);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*r)->Stream([](const Trace&, model::TableKind) { return OkStatus(); }).ok());
  EXPECT_EQ((*r)->report().events_lost, chunk.rows);
  EXPECT_EQ((*r)->report().Describe(), report.Describe());
}

// Stream with a kind filter decodes no chunk of the kinds it refuses: a
// damaged kernel chunk goes unnoticed by a reader of other kinds (it never
// reads it) and is reported to one that reads kernels; the wanted rows are
// all there either way.
TEST(CorruptionTest, StreamSkipsTheChunksOfKindsItIsNotAskedFor) {
  Trace full = SmallTrace();
  ASSERT_GT(full.Rows<model::KernelEvent>().size(), 0u);
  ASSERT_GT(full.Rows<model::ApiEvent>().size(), 0u);
  std::vector<uint8_t> bytes = Serialize(full, {.zstd_level = 0, .rows_per_chunk = 5});
  {
    auto r = SbtReader::FromMemory(bytes);
    ASSERT_TRUE(r.ok());
    for (const ChunkIndexEntry& e : (*r)->chunks())
      if (e.type == uint16_t(ChunkType::kTable) &&
          e.table_kind == uint16_t(model::TableKind::kKernel)) {
        bytes[e.offset + kChunkHeaderSize + 2] ^= 0x01;
        break;
      }
  }
  for (bool want_kernels : {false, true}) {
    SCOPED_TRACE(want_kernels ? "kernels and API calls" : "API calls only");
    auto r = SbtReader::FromMemory(bytes);
    ASSERT_TRUE(r.ok());
    size_t api = 0, other = 0;
    ASSERT_TRUE((*r)->Stream(
                        [&](const Trace& batch, model::TableKind kind) {
                          if (kind == model::TableKind::kApi)
                            api += batch.Rows<model::ApiEvent>().size();
                          else
                            ++other;
                          return OkStatus();
                        },
                        {},
                        [&](model::TableKind kind) {
                          return kind == model::TableKind::kApi ||
                                 (want_kernels && kind == model::TableKind::kKernel);
                        })
                    .ok());
    EXPECT_EQ(api, full.Rows<model::ApiEvent>().size());
    EXPECT_EQ(other > 0, want_kernels);  // kernel chunks only when asked
    // A chunk not decoded is still checked (header and checksum): the damage
    // is reported either way.
    EXPECT_FALSE((*r)->report().clean());
    EXPECT_NE((*r)->report().Describe().find("payload checksum mismatch (5 kernel events skipped)"),
              std::string::npos)
        << (*r)->report().Describe();
  }
}

}  // namespace
}  // namespace tracesmith::format
