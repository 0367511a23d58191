// zstd chunks whose headers lie: decompression work stays bounded by the
// file's size whatever they declare, failures are reported once with their
// offset, and a chunk that failed is not decompressed again by later passes.
#include <gtest/gtest.h>
#include <zstd.h>

#include <chrono>
#include <cstring>
#include <random>

#include "testing/sbt_forge.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

using model::Trace;
using testing::AppendForgedChunk;
using testing::ForgeFileHeader;

constexpr uint16_t kTable = uint16_t(ChunkType::kTable);

double SecondsSince(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

std::vector<uint8_t> Junk(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

std::vector<uint8_t> Zstd(const std::vector<uint8_t>& raw) {
  std::vector<uint8_t> out(ZSTD_compressBound(raw.size()));
  const size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

// The files: chunks declaring 64 MiB of raw bytes over 12 bytes of
// junk (3.6 KB: 22 s to open; 36 KB: minutes). Each is damage, found before
// any output is allocated.
TEST(DecompressionBounds, JunkDeclaringHugeSizesIsRejectedUpFront) {
  for (int chunks : {100, 1000}) {
    std::vector<uint8_t> file = ForgeFileHeader();
    std::vector<uint64_t> offsets;
    for (int i = 0; i < chunks; ++i) {
      offsets.push_back(file.size());
      AppendForgedChunk(&file, kTable, kChunkZstd, kMaxChunkRawBytes, Junk(12, i));
    }
    testing::TempPath path(".sbt");
    ASSERT_TRUE(WriteStringToFile(path.path(), std::string(file.begin(), file.end())).ok());
    const auto begin = std::chrono::steady_clock::now();
    ReadReport report;
    auto t = ReadTraceFile(path.path(), &report);
    const double seconds = SecondsSince(begin);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_LT(seconds, 2.0) << file.size() << "-byte file";
    ASSERT_EQ(report.chunks_damaged, uint64_t(chunks));
    ASSERT_EQ(report.damage.size(), size_t(chunks));
    for (int i = 0; i < chunks; ++i) {
      EXPECT_EQ(report.damage[i].offset, offsets[i]);
      EXPECT_NE(report.damage[i].what.find("more than zstd expands"), std::string::npos)
          << report.damage[i].what;
    }
  }
}

// A real zstd frame under a header that declares another size, and junk
// after a valid frame header: damage, each with its reason.
TEST(DecompressionBounds, FramesThatDisagreeWithTheirHeaderAreDamage) {
  const std::vector<uint8_t> raw(1000, 7);
  std::vector<uint8_t> frame = Zstd(raw);
  std::vector<uint8_t> file = ForgeFileHeader();
  AppendForgedChunk(&file, kTable, kChunkZstd, 2000, frame);
  std::vector<uint8_t> cut = frame;
  cut.resize(cut.size() - 2);
  AppendForgedChunk(&file, kTable, kChunkZstd, 1000, cut);
  AppendForgedChunk(&file, kTable, kChunkZstd, 1000, Junk(100, 1));
  auto r = SbtReader::FromMemory(file);
  ASSERT_TRUE(r.ok());
  Trace t;
  ASSERT_TRUE((*r)->ReadAll(&t).ok());
  const ReadReport& report = (*r)->report();
  ASSERT_EQ(report.damage.size(), 3u) << report.Describe();
  EXPECT_NE(report.damage[0].what.find("zstd frame declares 1000 bytes, the chunk header 2000"),
            std::string::npos)
      << report.damage[0].what;
  EXPECT_NE(report.damage[1].what.find("zstd: "), std::string::npos) << report.damage[1].what;
  EXPECT_NE(report.damage[2].what.find("not a zstd frame"), std::string::npos)
      << report.damage[2].what;
}

// ReadAll, Stream and ReadRawChunks on one reader: a chunk that failed is
// reported once and skipped by the later passes.
TEST(DecompressionBounds, FailedChunksAreNotDecompressedAgain) {
  Trace good;
  good.Rows<model::KernelEvent>().push_back({.start_ns = 5, .end_ns = 9});
  testing::TempPath good_path(".sbt");
  ASSERT_TRUE(WriteTraceFile(good, good_path.path(), {.zstd_level = 0}).ok());
  auto good_reader = SbtReader::Open(good_path.path());
  ASSERT_TRUE(good_reader.ok());
  const std::vector<uint8_t> good_bytes = [&] {
    auto s = ReadFileToString(good_path.path());
    return std::vector<uint8_t>(s->begin(), s->end());
  }();

  std::vector<uint8_t> file = ForgeFileHeader();
  AppendForgedChunk(&file, kTable, kChunkZstd, 1000, Junk(100, 2));
  AppendForgedChunk(&file, kFirstRawChunkType, kChunkZstd, 1000, Junk(100, 3));
  for (const ChunkIndexEntry& c : (*good_reader)->chunks()) {  // the good file's chunks
    uint32_t len;
    std::memcpy(&len, good_bytes.data() + c.offset + 8, 4);
    file.insert(file.end(), good_bytes.begin() + c.offset,
                good_bytes.begin() + c.offset + kChunkHeaderSize + len);
  }
  auto r = SbtReader::FromMemory(file);
  ASSERT_TRUE(r.ok());
  Trace t;
  ASSERT_TRUE((*r)->ReadAll(&t).ok());
  EXPECT_EQ(t.Rows<model::KernelEvent>().size(), 1u);
  size_t raw_chunks = 0;
  auto raw = [&](std::span<const uint8_t>, uint64_t) {
    ++raw_chunks;
    return OkStatus();
  };
  ASSERT_TRUE((*r)->ReadRawChunks(kFirstRawChunkType, raw).ok());
  const ReadReport first = (*r)->report();
  ASSERT_EQ(first.damage.size(), 2u) << first.Describe();
  EXPECT_EQ(first.chunks_damaged, 2u);

  size_t streamed = 0;
  ASSERT_TRUE((*r)->Stream([&](const Trace& batch, model::TableKind) {
                    streamed += batch.EventCount();
                    return OkStatus();
                  })
                  .ok());
  ASSERT_TRUE((*r)->ReadAll(&t).ok());
  ASSERT_TRUE((*r)->ReadRawChunks(kFirstRawChunkType, raw).ok());
  EXPECT_EQ(streamed, 1u);
  EXPECT_EQ(raw_chunks, 0u);
  EXPECT_EQ((*r)->report().Describe(), first.Describe());
  EXPECT_EQ((*r)->report().chunks_damaged, 2u);
}

// Chunks that really expand (64 MiB of zeros from 2.3 KB, within zstd's
// ratio): a read of the file produces at most 1 GiB + 256 x its size, then
// stops with an error naming the limit.
TEST(DecompressionBounds, OutputPerReadIsBoundedByTheFileSize) {
  const std::vector<uint8_t> frame = Zstd(std::vector<uint8_t>(kMaxChunkRawBytes, 0));
  std::vector<uint8_t> file = ForgeFileHeader();
  const int kChunks = 17;  // 17 x 64 MiB > 1 GiB + 256 x ~40 KB
  for (int i = 0; i < kChunks; ++i)
    AppendForgedChunk(&file, kTable, kChunkZstd, kMaxChunkRawBytes, frame);
  const uint64_t budget = (1ull << 30) + 256 * file.size();
  ASSERT_GT(uint64_t{kChunks} * kMaxChunkRawBytes, budget);
  ASSERT_LE(uint64_t{kChunks - 1} * kMaxChunkRawBytes, budget);
  const auto begin = std::chrono::steady_clock::now();
  auto r = SbtReader::FromMemory(file);
  ASSERT_TRUE(r.ok());
  Trace t;
  Status st = (*r)->ReadAll(&t);
  EXPECT_LT(SecondsSince(begin), 5.0);
  ASSERT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("zstd output"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(StrFormat("chunk #%d", kChunks - 1)), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace tracesmith::format
