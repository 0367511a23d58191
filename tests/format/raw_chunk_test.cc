// Raw (replay payload) chunks: SbtWriter::WriteRawChunk / SbtReader::ReadRawChunks.
#include <gtest/gtest.h>

#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

struct Seen {
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<uint64_t> offsets;
};

Seen ReadType(SbtReader& r, uint16_t type) {
  Seen s;
  EXPECT_TRUE(r.ReadRawChunks(type, [&](std::span<const uint8_t> p, uint64_t off) {
                 s.payloads.emplace_back(p.begin(), p.end());
                 s.offsets.push_back(off);
                 return OkStatus();
               }).ok());
  return s;
}

// A trace with one kernel row and three raw chunks: a large compressible one
// and a small one of type 0x41, one of 0x42.
std::string WriteSample(const testing::TempPath& tmp, bool close = true) {
  auto w = SbtWriter::Open(tmp.path());
  EXPECT_TRUE(w.ok());
  model::KernelEvent k{};
  k.start_ns = 10;
  k.end_ns = 20;
  (*w)->Append(k);
  EXPECT_TRUE((*w)->Flush().ok());  // the rows first: the raw chunks end the file
  std::vector<uint8_t> big(1 << 20, 0xab), small = {1, 2, 3};
  EXPECT_TRUE((*w)->WriteRawChunk(0x41, big).ok());
  EXPECT_TRUE((*w)->WriteRawChunk(0x42, small).ok());
  EXPECT_TRUE((*w)->WriteRawChunk(0x41, small).ok());
  if (close) {
    EXPECT_TRUE((*w)->Close().ok());
  } else {
    EXPECT_TRUE((*w)->Flush().ok());
  }
  EXPECT_LT((*w)->stats().bytes, 64u << 10);  // the 1 MiB chunk was compressed
  auto bytes = ReadFileToString(tmp.path());
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : std::string();
}

TEST(RawChunkTest, RoundTripInFileOrderBesideTraceRows) {
  testing::TempPath tmp;
  WriteSample(tmp);
  auto r = SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  Seen a = ReadType(**r, 0x41);
  ASSERT_EQ(a.payloads.size(), 2u);
  EXPECT_EQ(a.payloads[0], std::vector<uint8_t>(1 << 20, 0xab));
  EXPECT_EQ(a.payloads[1], (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_LT(a.offsets[0], a.offsets[1]);
  Seen b = ReadType(**r, 0x42);
  ASSERT_EQ(b.payloads.size(), 1u);
  EXPECT_EQ(ReadType(**r, 0x43).payloads.size(), 0u);
  // Trace readers skip them and still see the rows.
  model::Trace t;
  ASSERT_TRUE((*r)->ReadAll(&t).ok());
  EXPECT_EQ(t.Rows<model::KernelEvent>().size(), 1u);
  EXPECT_EQ((*r)->report().chunks_skipped_unknown, 3u);
  EXPECT_TRUE((*r)->report().clean());
}

TEST(RawChunkTest, RejectsTypesOutsideTheReservedRange) {
  testing::TempPath tmp;
  auto w = SbtWriter::Open(tmp.path());
  ASSERT_TRUE(w.ok());
  const uint8_t one[1] = {0};
  EXPECT_FALSE((*w)->WriteRawChunk(0x02, one).ok());
  EXPECT_FALSE((*w)->WriteRawChunk(0x80, one).ok());
  EXPECT_TRUE((*w)->WriteRawChunk(0x7f, one).ok());
  EXPECT_TRUE((*w)->status().ok());  // a refused call does not poison the writer
  auto r = SbtReader::FromMemory({});
  EXPECT_FALSE(r.ok());
}

TEST(RawChunkTest, UnfinishedFileIsScannedAndDamageReported) {
  testing::TempPath tmp;
  std::string bytes = WriteSample(tmp, /*close=*/false);
  // Cut inside the last chunk: the first two raw chunks survive.
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 2);
  auto r = SbtReader::FromMemory(cut);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadType(**r, 0x41).payloads.size(), 1u);
  EXPECT_EQ(ReadType(**r, 0x42).payloads.size(), 1u);
  EXPECT_FALSE((*r)->report().clean());
  // A flipped payload byte: the chunk is skipped with a message naming it.
  std::vector<uint8_t> flip(bytes.begin(), bytes.end());
  flip[flip.size() - 1] ^= 0xff;  // inside the last small 0x41 chunk's payload
  auto f = SbtReader::FromMemory(flip);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(ReadType(**f, 0x41).payloads.size(), 1u);
  ASSERT_FALSE((*f)->report().clean());
  EXPECT_NE((*f)->report().Describe().find("replay payload chunk"), std::string::npos)
      << (*f)->report().Describe();
  EXPECT_FALSE((*f)->ReadRawChunks(0x01, [](auto, uint64_t) { return OkStatus(); }).ok());
}

}  // namespace
}  // namespace tracesmith::format
