// SbtReader::ContentIdentity and ReportFor: what a reader that comes back to
// a file later (Python's lazy load) relies on.
#include <gtest/gtest.h>

#include <cstring>

#include "testing/random_records.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

std::vector<uint8_t> Serialize(const model::Trace& t) {
  testing::TempPath tmp;
  EXPECT_TRUE(WriteTraceFile(t, tmp.path(), {.zstd_level = 0, .rows_per_chunk = 5}).ok());
  auto s = ReadFileToString(tmp.path());
  return std::vector<uint8_t>(s->begin(), s->end());
}

std::unique_ptr<SbtReader> Open(std::span<const uint8_t> bytes) {
  auto r = SbtReader::FromMemory(bytes);
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::move(*r) : nullptr;
}

TEST(ReaderReportTest, IdentityIsTheSameForTheSameBytesAndDiffersForOtherContents) {
  const std::vector<uint8_t> a = Serialize(testing::RandomTrace(42, 12));
  const std::vector<uint8_t> a2 = a;
  const std::vector<uint8_t> b = Serialize(testing::RandomTrace(43, 12));
  EXPECT_EQ(Open(a)->ContentIdentity(), Open(a2)->ContentIdentity());
  EXPECT_NE(Open(a)->ContentIdentity(), Open(b)->ContentIdentity());
  // The same file cut short: another identity.
  EXPECT_NE(Open(a)->ContentIdentity(), Open(std::span(a.data(), a.size() - 1))->ContentIdentity());
}

TEST(ReaderReportTest, DamageInsideAChunkBelongsToThatChunk) {
  std::vector<uint8_t> bytes = Serialize(testing::RandomTrace(42, 12));
  auto clean = Open(bytes);
  const std::vector<ChunkIndexEntry> chunks = clean->chunks();
  ASSERT_GE(chunks.size(), 3u);
  // A byte in the middle of the second chunk's payload.
  const ChunkIndexEntry target = chunks[1];
  const uint64_t end = chunks[2].offset;
  bytes[target.offset + (end - target.offset) / 2 + 12] ^= 0x5a;
  auto reader = Open(bytes);
  model::Trace t;
  ASSERT_TRUE(reader->ReadAll(&t).ok());
  const ReadReport& all = reader->report();
  ASSERT_EQ(all.damage.size(), 1u) << all.Describe();
  // Taken by the chunk it is in...
  ReadReport mine =
      reader->ReportFor([&](const ChunkIndexEntry* c) { return c && c->offset == target.offset; });
  EXPECT_EQ(mine.damage.size(), 1u);
  EXPECT_EQ(mine.valid_bytes, all.valid_bytes);
  // ...and left out, with its bytes and events, by a reader of the others.
  ReadReport others = reader->ReportFor([&](const ChunkIndexEntry* c) { return !c; });
  EXPECT_TRUE(others.damage.empty());
  EXPECT_EQ(others.valid_bytes, all.valid_bytes + (end - target.offset));
  EXPECT_EQ(others.events_lost, all.events_lost - std::min(all.events_lost, target.rows));
}

}  // namespace
}  // namespace tracesmith::format

namespace tracesmith::format {
namespace {

// The last chunk's extent ends where its header says: the index and the
// trailer after it are not its bytes (a reader leaving it out would count
// them twice, and could report more readable bytes than the file has).
TEST(ReaderReportTest, TheLastChunkEndsBeforeTheIndex) {
  std::vector<uint8_t> bytes = Serialize(testing::RandomTrace(42, 12));
  const std::vector<ChunkIndexEntry> chunks = Open(bytes)->chunks();
  ASSERT_GE(chunks.size(), 2u);
  const ChunkIndexEntry last = chunks.back();
  uint32_t stored_len = 0;
  std::memcpy(&stored_len, bytes.data() + last.offset + 8, 4);
  const uint64_t end = last.offset + kChunkHeaderSize + stored_len;
  ASSERT_LT(end, bytes.size());    // the index and trailer follow
  bytes[last.offset + 2] ^= 0x5a;  // its magic: the whole chunk is lost
  auto reader = Open(bytes);
  model::Trace t;
  (void)reader->ReadAll(&t);
  const ReadReport& all = reader->report();
  ASSERT_FALSE(all.damage.empty()) << all.Describe();
  bool at_chunk = false;
  for (const Damage& d : all.damage) at_chunk |= d.offset == last.offset;
  ASSERT_TRUE(at_chunk) << all.Describe();
  ReadReport others = reader->ReportFor([](const ChunkIndexEntry*) { return false; });
  EXPECT_LE(others.valid_bytes, bytes.size());
  EXPECT_EQ(others.valid_bytes, all.valid_bytes + (end - last.offset)) << all.Describe();
}

// A command that passes over a damaged file several times (timeline, memory)
// reports each chunk's bytes and state once: the readable bytes never exceed
// the file, and equal what one pass reports.
TEST(ReaderReportTest, SeveralPassesCountEachChunkOnce) {
  std::vector<uint8_t> bytes = Serialize(testing::RandomTrace(42, 12));
  const std::vector<ChunkIndexEntry> chunks = Open(bytes)->chunks();
  ASSERT_GE(chunks.size(), 3u);
  bytes[chunks[1].offset + (chunks[2].offset - chunks[1].offset) / 2 + 12] ^= 0x5a;
  auto once = Open(bytes);
  model::Trace t;
  ASSERT_TRUE(once->ReadAll(&t).ok());
  auto many = Open(bytes);
  const auto ignore = [](const model::Trace&, model::TableKind) { return OkStatus(); };
  ASSERT_TRUE(many->Stream(ignore, {}, [](model::TableKind) { return false; }).ok());
  ASSERT_TRUE(many->Stream(ignore).ok());
  model::Trace t2;
  ASSERT_TRUE(many->ReadAll(&t2).ok());
  const ReadReport& a = once->report();
  const ReadReport& b = many->report();
  EXPECT_EQ(b.valid_bytes, a.valid_bytes);
  EXPECT_LT(b.valid_bytes, bytes.size());
  EXPECT_EQ(b.chunks_read, a.chunks_read);
  EXPECT_EQ(b.chunks_damaged, a.chunks_damaged);
  EXPECT_EQ(b.damage.size(), 1u) << b.Describe();
}

}  // namespace
}  // namespace tracesmith::format
