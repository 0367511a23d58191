// Replay payload round trips and damaged captures.
#include <gtest/gtest.h>

#include "pattern.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/replay_payload.h"

namespace tracesmith::replay {
namespace {

using ::tracesmith::testing::Pattern;

format::LaunchRecord SampleLaunch(uint64_t index, uint64_t module) {
  format::LaunchRecord l;
  l.index = index;
  l.module_hash = module;
  l.function = "_Z6followP4Nodei";
  l.grid[0] = 80;
  l.block[0] = 256;
  l.cluster[0] = 2;
  l.dynamic_shared_bytes = 1024;
  l.stream_id = 7;
  l.recorded_ns = 12345;
  l.snapshot_ranges = index == 0 ? 2 : 1;
  l.params = Pattern(12, 3);
  l.param_info = {{0, 8}, {8, 4}};
  l.correlation_id = index == 0 ? 0 : 4242;  // optional field: absent for launch 0
  if (index == 1) l.attributes = {{2, {1, 0, 0, 0}}, {8, {3, 0, 0, 0}}};  // cooperative, priority
  return l;
}

// Writes a capture: info, one module (added twice), two launches whose
// snapshots share contents, and one blob larger than a piece.
struct Sample {
  std::vector<uint8_t> image = Pattern(5000, 1);
  std::vector<uint8_t> before = Pattern(4096, 2);
  std::vector<uint8_t> after = Pattern(4096, 4);
  std::vector<uint8_t> big = std::vector<uint8_t>(format::kBlobPieceBytes + 4321, 0x5a);
  uint64_t module = 0;
  uint64_t deduplicated = 0;

  void Write(const std::string& path) {
    auto w = format::SbtWriter::Open(path);
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    ASSERT_TRUE(p.WriteCaptureInfo({"NVIDIA H100 80GB HBM3", 9, 0, 13000, "test"}).ok());
    auto m = p.AddModule(image, format::ImageKind::kCubin, "follow.cubin");
    ASSERT_TRUE(m.ok());
    module = *m;
    ASSERT_EQ(p.AddModule(image, format::ImageKind::kCubin, "follow.cubin").value(), module);
    ASSERT_TRUE(p.AddLaunch(SampleLaunch(0, module)).ok());
    ASSERT_TRUE(p.AddSnapshot(0, format::SnapshotPhase::kBefore, 0x7f0000000000, before).ok());
    ASSERT_TRUE(p.AddSnapshot(0, format::SnapshotPhase::kAfter, 0x7f0000000000, after).ok());
    ASSERT_TRUE(p.AddSnapshot(0, format::SnapshotPhase::kBefore, 0x7f0000200000, big).ok());
    ASSERT_TRUE(p.AddSnapshot(0, format::SnapshotPhase::kAfter, 0x7f0000200000, big).ok());
    ASSERT_TRUE(p.AddLaunch(SampleLaunch(1, module)).ok());
    ASSERT_TRUE(p.AddSnapshot(1, format::SnapshotPhase::kBefore, 0x7f0000000000, after).ok());
    ASSERT_TRUE(p.AddSnapshot(1, format::SnapshotPhase::kAfter, 0x7f0000000000, after).ok());
    deduplicated = p.blobs_deduplicated();
    ASSERT_TRUE((*w)->Close().ok());
  }
};

std::vector<uint8_t> Bytes(const StatusOr<std::span<const uint8_t>>& s) {
  EXPECT_TRUE(s.ok());
  return s.ok() ? std::vector<uint8_t>(s.value().begin(), s.value().end()) : std::vector<uint8_t>();
}

// The payload (and file offset) of the last chunk of `type` in a file.
std::vector<uint8_t> ChunkPayload(const std::string& path, format::PayloadChunk type,
                                  uint64_t* offset = nullptr) {
  std::vector<uint8_t> payload;
  auto r = format::SbtReader::Open(path);
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return payload;
  Status st = (*r)->ReadRawChunks(uint16_t(type), [&](std::span<const uint8_t> p, uint64_t off) {
    payload.assign(p.begin(), p.end());
    if (offset) *offset = off;
    return OkStatus();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return payload;
}

StatusOr<format::ReplayCapture> Read(std::span<const uint8_t> bytes) {
  ASSIGN_OR_RETURN(auto r, format::SbtReader::FromMemory(bytes));
  return format::ReadReplayCapture(*r);
}

TEST(PayloadTest, RoundTripWithDeduplication) {
  tracesmith::testing::TempPath tmp;
  Sample s;
  s.Write(tmp.path());
  EXPECT_EQ(s.deduplicated, 4u);  // module, big after, 'after' twice for launch 1
  auto r = format::SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  auto cap = format::ReadReplayCapture(**r);
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  ASSERT_TRUE(format::ValidateCapture(*cap).ok()) << format::ValidateCapture(*cap).ToString();
  EXPECT_TRUE(cap->has_info);
  EXPECT_EQ(cap->info.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cap->info.cc_major, 9u);
  EXPECT_EQ(cap->info.driver_version, 13000u);
  ASSERT_EQ(cap->modules.size(), 1u);
  EXPECT_EQ(cap->modules[0].kind, format::ImageKind::kCubin);
  EXPECT_EQ(cap->modules[0].name, "follow.cubin");
  EXPECT_EQ(Bytes(cap->BlobData(s.module, "m")), s.image);
  ASSERT_EQ(cap->launches.size(), 2u);
  const format::LaunchRecord want = SampleLaunch(1, s.module), &got = cap->launches[1];
  EXPECT_EQ(got.index, 1u);
  EXPECT_EQ(got.function, want.function);
  EXPECT_EQ(got.grid[0], 80u);
  EXPECT_EQ(got.block[0], 256u);
  EXPECT_EQ(got.cluster[0], 2u);
  EXPECT_EQ(got.dynamic_shared_bytes, 1024u);
  EXPECT_EQ(got.recorded_ns, 12345u);
  EXPECT_EQ(got.snapshot_ranges, 1u);
  EXPECT_EQ(got.params, want.params);
  ASSERT_EQ(got.param_info.size(), 2u);
  EXPECT_EQ(got.param_info[1].offset, 8u);
  EXPECT_EQ(got.param_info[1].size, 4u);
  EXPECT_EQ(got.correlation_id, 4242u);
  EXPECT_EQ(cap->launches[0].correlation_id, 0u);
  EXPECT_TRUE(cap->launches[0].attributes.empty());
  ASSERT_EQ(got.attributes.size(), 2u);
  EXPECT_EQ(got.attributes[0].id, 2u);
  EXPECT_EQ(got.attributes[0].value, (std::vector<uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(got.attributes[1].id, 8u);
  EXPECT_EQ(got.attributes[1].value, (std::vector<uint8_t>{3, 0, 0, 0}));
  ASSERT_EQ(cap->snapshots.size(), 6u);
  EXPECT_EQ(cap->blobs.size(), 4u);  // image, before, after, big
  for (const format::SnapshotRecord& sn : cap->snapshots) {
    auto data = cap->BlobData(sn.hash, "s");
    ASSERT_TRUE(data.ok());
    EXPECT_EQ(data->size(), sn.size);
  }
  EXPECT_EQ(Bytes(cap->BlobData(cap->snapshots[2].hash, "big")), s.big);
}

// The memory scope of a launch and where each range came from are optional
// trailing fields: written when set, read back, and absent (defaults) in
// records that do not set them, with or without a correlation id or
// attributes before them.
TEST(PayloadTest, MemoryScopeAndRangeOriginsRoundTrip) {
  tracesmith::testing::TempPath tmp;
  const std::vector<uint8_t> bytes = Pattern(64, 9);
  {
    auto w = format::SbtWriter::Open(tmp.path());
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    auto m = p.AddModule(Pattern(100, 1), format::ImageKind::kCubin, "m");
    ASSERT_TRUE(m.ok());
    for (uint64_t index : {0, 1, 2, 3}) {
      format::LaunchRecord l = SampleLaunch(index, *m);
      l.correlation_id = index == 1 || index == 2 ? 77 : 0;
      l.attributes.clear();
      if (index == 2) l.attributes = {{2, {1, 0, 0, 0}}, {8, {3, 0, 0, 0}}};
      if (index != 3) {
        l.coverage = {format::MemoryScope::kReachable, 2, 3u << 30, 1, 5};
        if (index == 1) l.coverage = {format::MemoryScope::kParams, 0, 0, 0, 0};
      }
      l.snapshot_ranges = 1;
      ASSERT_TRUE(p.AddLaunch(l).ok());
      format::SnapshotOrigin o;
      if (index == 0) o = {format::RangeSource::kPointer, 0x7f0000200000, 0x10, 0x78, 14, 2};
      if (index == 2) o.source = format::RangeSource::kLive;
      ASSERT_TRUE(
          p.AddSnapshot(index, format::SnapshotPhase::kBefore, 0x7f0000000000, bytes, o).ok());
      ASSERT_TRUE(p.AddSnapshot(index, format::SnapshotPhase::kAfter, 0x7f0000000000, bytes).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = format::SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  auto cap = format::ReadReplayCapture(**r);
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  ASSERT_TRUE(format::ValidateCapture(*cap).ok()) << format::ValidateCapture(*cap).ToString();
  ASSERT_EQ(cap->launches.size(), 4u);
  const format::MemoryCoverage& c0 = cap->launches[0].coverage;
  EXPECT_EQ(c0.scope, format::MemoryScope::kReachable);
  EXPECT_EQ(c0.ranges_over_budget, 2u);
  EXPECT_EQ(c0.bytes_over_budget, 3ull << 30);
  EXPECT_EQ(c0.ranges_past_depth, 1u);
  EXPECT_EQ(c0.words_unresolved, 5u);
  EXPECT_FALSE(c0.complete());
  EXPECT_EQ(cap->launches[0].correlation_id, 0u);
  EXPECT_EQ(cap->launches[1].coverage.scope, format::MemoryScope::kParams);
  EXPECT_TRUE(cap->launches[1].coverage.complete());
  EXPECT_EQ(cap->launches[1].correlation_id, 77u);
  EXPECT_EQ(cap->launches[2].attributes.size(), 2u);
  EXPECT_EQ(cap->launches[2].coverage.scope, format::MemoryScope::kReachable);
  EXPECT_EQ(cap->launches[3].coverage.scope, format::MemoryScope::kUnknown);
  ASSERT_EQ(cap->snapshots.size(), 8u);
  const format::SnapshotOrigin& o = cap->snapshots[0].origin;
  EXPECT_EQ(o.source, format::RangeSource::kPointer);
  EXPECT_EQ(o.via, 0x7f0000200000u);
  EXPECT_EQ(o.first_offset, 0x10u);
  EXPECT_EQ(o.last_offset, 0x78u);
  EXPECT_EQ(o.pointers, 14u);
  EXPECT_EQ(o.depth, 2u);
  EXPECT_EQ(cap->snapshots[1].origin.source, format::RangeSource::kParameter);  // "after"
  EXPECT_EQ(cap->snapshots[4].origin.source, format::RangeSource::kLive);
  EXPECT_EQ(cap->snapshots[6].origin.source, format::RangeSource::kParameter);
  EXPECT_STREQ(format::MemoryScopeName(format::MemoryScope::kReachable), "reachable");

  // An unknown scope or source byte is refused, naming the chunk's offset.
  struct Case {
    format::PayloadChunk type;
    std::vector<uint8_t> tail;  // appended to the last chunk of `type` (launch 3's)
    const char* message;
  };
  for (const Case& k :
       {Case{format::PayloadChunk::kLaunch, {0, 0, 9, 0, 0, 0, 0}, "unknown memory scope 9"},
        Case{format::PayloadChunk::kSnapshot,
             {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
             "unknown range source 9"}}) {
    uint64_t offset = 0;
    std::vector<uint8_t> payload = ChunkPayload(tmp.path(), k.type, &offset);
    ASSERT_FALSE(payload.empty());
    payload.insert(payload.end(), k.tail.begin(), k.tail.end());
    format::ReplayCapture out;
    Status st = format::ParsePayloadChunk(uint16_t(k.type), payload, offset, &out);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find(k.message), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find(std::to_string(offset)), std::string::npos) << st.ToString();
  }
}

TEST(PayloadTest, StreamOpsRoundTripInSequenceOrder) {
  tracesmith::testing::TempPath tmp;
  const std::vector<uint8_t> host = Pattern(3000, 9);
  {
    auto w = format::SbtWriter::Open(tmp.path());
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    format::StreamOpRecord info{.before_launch = 3,
                                .seq = 0,
                                .kind = format::StreamOpKind::kStreamInfo,
                                .stream = 2,
                                .flags = 1,
                                .value = -2};
    format::StreamOpRecord copy{.before_launch = 3,
                                .seq = 2,
                                .kind = format::StreamOpKind::kCopyHtoD,
                                .stream = 2,
                                .dst = 0x7f0000001000};
    format::StreamOpRecord memset{.before_launch = 4,
                                  .seq = 1,
                                  .kind = format::StreamOpKind::kMemset,
                                  .stream = 0,
                                  .dst = 0x7f0000002000,
                                  .bytes = 64,
                                  .value = 0xbeef,
                                  .element_size = 2};
    format::StreamOpRecord wait{.before_launch = 5,
                                .seq = 3,
                                .kind = format::StreamOpKind::kStreamWaitEvent,
                                .stream = 1,
                                .event = 4};
    ASSERT_TRUE(p.AddStreamOp(info).ok());
    ASSERT_TRUE(p.AddStreamOp(copy, host).ok());
    ASSERT_TRUE(p.AddStreamOp(memset).ok());
    ASSERT_TRUE(p.AddStreamOp(wait).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = format::SbtReader::Open(tmp.path());
  ASSERT_TRUE(r.ok());
  auto cap = format::ReadReplayCapture(**r);
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  ASSERT_EQ(cap->stream_ops.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(cap->stream_ops[i].seq, i);
  const format::StreamOpRecord& info = cap->stream_ops[0];
  EXPECT_EQ(info.kind, format::StreamOpKind::kStreamInfo);
  EXPECT_EQ(info.stream, 2u);
  EXPECT_EQ(info.flags, 1u);
  EXPECT_EQ(info.value, -2);
  const format::StreamOpRecord& memset = cap->stream_ops[1];
  EXPECT_EQ(memset.kind, format::StreamOpKind::kMemset);
  EXPECT_EQ(memset.before_launch, 4u);
  EXPECT_EQ(memset.dst, 0x7f0000002000u);
  EXPECT_EQ(memset.bytes, 64u);
  EXPECT_EQ(memset.value, 0xbeef);
  EXPECT_EQ(memset.element_size, 2);
  const format::StreamOpRecord& copy = cap->stream_ops[2];
  EXPECT_EQ(copy.kind, format::StreamOpKind::kCopyHtoD);
  EXPECT_EQ(copy.bytes, host.size());
  EXPECT_EQ(Bytes(cap->BlobData(copy.data_hash, "copy")), host);
  EXPECT_EQ(cap->stream_ops[3].event, 4u);
  EXPECT_EQ(cap->stream_ops[3].stream, 1u);
  EXPECT_STREQ(format::StreamOpKindName(cap->stream_ops[3].kind), "stream wait event");
}

TEST(PayloadTest, StreamOpChunkIsBoundsChecked) {
  tracesmith::testing::TempPath tmp;
  {
    auto w = format::SbtWriter::Open(tmp.path(), {.zstd_level = 0});
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    format::StreamOpRecord memset{
        .kind = format::StreamOpKind::kMemset, .dst = 0x1000, .bytes = 8, .element_size = 4};
    ASSERT_TRUE(p.AddStreamOp(memset).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  std::vector<uint8_t> payload = ChunkPayload(tmp.path(), format::PayloadChunk::kStreamOp);
  ASSERT_FALSE(payload.empty());
  for (size_t n = 0; n < payload.size(); ++n) {
    format::ReplayCapture cap;
    Status st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kStreamOp),
                                          std::span<const uint8_t>(payload.data(), n), 100, &cap);
    ASSERT_FALSE(st.ok()) << n;
    EXPECT_TRUE(cap.stream_ops.empty());
  }
  // The element size is the byte before the 8-byte data hash.
  std::vector<uint8_t> bad = payload;
  ASSERT_EQ(bad[bad.size() - 9], 4);
  bad[bad.size() - 9] = 3;
  format::ReplayCapture cap;
  Status st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kStreamOp), bad, 100, &cap);
  EXPECT_NE(st.message().find("memset element size 3"), std::string::npos) << st.ToString();
  bad = payload;
  bad[3] = 77;  // version, before_launch, seq, then the kind
  st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kStreamOp), bad, 100, &cap);
  EXPECT_NE(st.message().find("unknown stream op kind 77"), std::string::npos) << st.ToString();
}

TEST(PayloadTest, ContentHashIsStable) {
  // Pinned: the hash is part of the file format (docs/replay-format.md).
  EXPECT_EQ(format::ContentHash({}), format::ContentHash(std::vector<uint8_t>{}));
  std::vector<uint8_t> abc = {'a', 'b', 'c'};
  EXPECT_NE(format::ContentHash(abc), format::ContentHash(std::vector<uint8_t>{'a', 'b', 'd'}));
  EXPECT_NE(format::ContentHash(std::vector<uint8_t>(8, 0)),
            format::ContentHash(std::vector<uint8_t>(9, 0)));
  EXPECT_EQ(format::ContentHash(abc), 0x723bb596805ba2ecull);
}

TEST(PayloadTest, TruncatedCaptureIsReportedNotCrashed) {
  tracesmith::testing::TempPath tmp;
  Sample s;
  s.Write(tmp.path());
  auto read = ReadFileToString(tmp.path());
  ASSERT_TRUE(read.ok());
  std::string bytes = *read;
  std::vector<uint8_t> all(bytes.begin(), bytes.end());
  size_t clean_cuts = 0;
  // Every 997th cut point plus the last bytes: never a crash; a capture cut
  // before its end never validates unless only the index was lost.
  for (size_t cut = 0; cut < all.size(); cut += (cut + 64 >= all.size() ? 1 : 997)) {
    auto cap = Read(std::span<const uint8_t>(all.data(), cut));
    if (!cap.ok()) continue;  // e.g. shorter than the SBT header
    Status v = format::ValidateCapture(*cap);
    if (v.ok()) {
      ++clean_cuts;
      continue;
    }
    EXPECT_FALSE(v.message().empty());
  }
  EXPECT_LE(clean_cuts, 40u);  // only cuts inside the footer index/trailer keep everything
  // A cut inside the big blob names it.
  auto cap = Read(std::span<const uint8_t>(all.data(), all.size() / 2));
  ASSERT_TRUE(cap.ok());
  Status v = format::ValidateCapture(*cap);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("launch 0"), std::string::npos) << v.ToString();
}

TEST(PayloadTest, MissingModuleNamesTheLaunch) {
  tracesmith::testing::TempPath tmp;
  {
    auto w = format::SbtWriter::Open(tmp.path());
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    ASSERT_TRUE(p.AddLaunch(SampleLaunch(5, 0x1234)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  auto r = format::SbtReader::Open(tmp.path());
  auto cap = format::ReadReplayCapture(**r);
  ASSERT_TRUE(cap.ok());
  Status v = format::ValidateCapture(*cap);
  EXPECT_EQ(v.code(), StatusCode::kNotFound);
  EXPECT_NE(v.message().find("launch 5 (_Z6followP4Nodei): module 0x0000000000001234 is missing"),
            std::string::npos)
      << v.ToString();
  format::ReplayCapture empty;
  EXPECT_FALSE(format::ValidateCapture(empty).ok());
}

// Hand-built payloads: every prefix of a launch chunk is an error naming the
// chunk and byte, and a parameter outside the buffer is refused.
TEST(PayloadTest, LaunchChunkIsBoundsChecked) {
  tracesmith::testing::TempPath tmp;
  {
    auto w = format::SbtWriter::Open(tmp.path(), {.zstd_level = 0});
    ASSERT_TRUE(w.ok());
    format::ReplayPayloadWriter p(w->get());
    ASSERT_TRUE(p.AddLaunch(SampleLaunch(0, 1)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  uint64_t offset = 0;
  std::vector<uint8_t> payload = ChunkPayload(tmp.path(), format::PayloadChunk::kLaunch, &offset);
  ASSERT_FALSE(payload.empty());
  for (size_t n = 0; n < payload.size(); ++n) {
    format::ReplayCapture cap;
    Status st =
        format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kLaunch),
                                  std::span<const uint8_t>(payload.data(), n), offset, &cap);
    ASSERT_FALSE(st.ok()) << n;
    EXPECT_NE(st.message().find(StrFormat("replay launch chunk at byte %llu",
                                          static_cast<unsigned long long>(offset))),
              std::string::npos)
        << st.ToString();
    EXPECT_TRUE(cap.launches.empty());
  }
  // Parameter 1 claims offset 8 size 4 of a 12-byte buffer; grow its size to 5.
  // Its size varint is the byte before the buffer length varint (12) and the
  // 12 buffer bytes: payload.size() - 12 - 1 - 1.
  std::vector<uint8_t> bad = payload;
  ASSERT_EQ(bad[bad.size() - 14], 4);
  bad[bad.size() - 14] = 5;
  format::ReplayCapture cap;
  Status st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kLaunch), bad, offset, &cap);
  EXPECT_NE(
      st.message().find("parameter 1 (offset 8, size 5) exceeds the 12-byte parameter buffer"),
      std::string::npos)
      << st.ToString();
  format::ReplayPayloadWriter w(nullptr);
  format::LaunchRecord l = SampleLaunch(0, 1);
  l.param_info[1].size = 5;
  EXPECT_FALSE(w.AddLaunch(l).ok());  // refused before touching the (null) writer
}

TEST(PayloadTest, BlobPiecesOutOfOrderOrWrongHashAreRefused) {
  ByteWriter w;
  w.PutU8(1);
  w.PutU64(99);    // wrong hash for the content below
  w.PutVarint(4);  // total
  w.PutVarint(0);  // offset
  w.PutVarint(4);  // length
  w.PutU32(0xdeadbeef);
  format::ReplayCapture cap;
  Status st =
      format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kBlobPiece), w.buffer(), 4096, &cap);
  EXPECT_NE(st.message().find("content does not match its hash"), std::string::npos)
      << st.ToString();
  ByteWriter o;
  o.PutU8(1);
  o.PutU64(7);
  o.PutVarint(1ull << 40);  // claims 1 TiB: refused before any allocation
  o.PutVarint(0);
  o.PutVarint(1);
  o.PutU8(0);
  st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kBlobPiece), o.buffer(), 0, &cap);
  EXPECT_NE(st.message().find("exceeds the"), std::string::npos) << st.ToString();
  ByteWriter g;
  g.PutU8(1);
  g.PutU64(8);
  g.PutVarint(100);
  g.PutVarint(50);  // first piece must start at 0
  g.PutVarint(1);
  g.PutU8(0);
  st = format::ParsePayloadChunk(uint16_t(format::PayloadChunk::kBlobPiece), g.buffer(), 0, &cap);
  EXPECT_NE(st.message().find("piece at offset 50, expected 0"), std::string::npos)
      << st.ToString();
}

}  // namespace
}  // namespace tracesmith::replay
