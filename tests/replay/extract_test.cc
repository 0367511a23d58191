// One-launch reproducers (extract.h): what the extracted capture holds, that
// it reads and validates alone, and the refusals.
#include "tracesmith/replay/extract.h"

#include <gtest/gtest.h>

#include "pattern.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::replay {
namespace {

using ::tracesmith::testing::Pattern;

// Three launches of two modules, stream ops between them; launch 7 has a
// range reached through a pointer and a kernel row with its time.
void WriteCapture(const std::string& path) {
  auto w = format::SbtWriter::Open(path);
  ASSERT_TRUE(w.ok());
  format::ReplayPayloadWriter p(w->get());
  ASSERT_TRUE(p.WriteCaptureInfo({"NVIDIA H100 80GB HBM3", 9, 0, 13000, "test"}).ok());
  const uint64_t m1 = p.AddModule(Pattern(3000, 1), format::ImageKind::kCubin, "a").value();
  const uint64_t m2 = p.AddModule(Pattern(5000, 2), format::ImageKind::kFatbin, "b").value();
  for (uint64_t index : {3, 7, 9}) {
    format::LaunchRecord l;
    l.index = index;
    l.module_hash = index == 7 ? m2 : m1;
    l.function = index == 7 ? "_Z6gatherPPKfPfi" : "_Z5scalePfif";
    l.params = Pattern(24, uint32_t(index));
    l.param_info = {{0, 8}, {8, 8}, {16, 4}};
    l.correlation_id = uint32_t(100 + index);
    l.coverage.scope = format::MemoryScope::kReachable;
    l.snapshot_ranges = index == 7 ? 2 : 1;
    ASSERT_TRUE(p.AddLaunch(l).ok());
    ASSERT_TRUE(
        p.AddSnapshot(index, format::SnapshotPhase::kBefore, 0x7f0000000000, Pattern(4096, 5))
            .ok());
    ASSERT_TRUE(
        p.AddSnapshot(index, format::SnapshotPhase::kAfter, 0x7f0000000000, Pattern(4096, 6)).ok());
    if (index == 7) {
      format::SnapshotOrigin o{format::RangeSource::kPointer, 0x7f0000000000, 0, 0x18, 4, 1};
      ASSERT_TRUE(
          p.AddSnapshot(7, format::SnapshotPhase::kBefore, 0x7f0000200000, Pattern(1 << 16, 7), o)
              .ok());
      ASSERT_TRUE(
          p.AddSnapshot(7, format::SnapshotPhase::kAfter, 0x7f0000200000, Pattern(1 << 16, 7))
              .ok());
    }
    format::StreamOpRecord op;
    op.kind = format::StreamOpKind::kMemset;
    op.before_launch = index;
    op.seq = index;
    op.dst = 0x7f0000000000;
    op.bytes = 64;
    op.element_size = 1;
    ASSERT_TRUE(p.AddStreamOp(op).ok());
  }
  model::KernelEvent k{};
  k.start_ns = 1000;
  k.end_ns = 3500;
  k.correlation_id = 107;
  (*w)->Append(k);
  ASSERT_TRUE((*w)->Close().ok());
}

TEST(Extract, WritesOnlyWhatTheLaunchNeedsAndItReadsAlone) {
  ::tracesmith::testing::TempPath in, out;
  WriteCapture(in.path());
  ExtractOptions o;
  o.launch = 7;
  auto s = ExtractLaunch(in.path(), out.path(), o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->launch, 7u);
  EXPECT_EQ(s->function, "_Z6gatherPPKfPfi");
  EXPECT_EQ(s->ranges, 2u);
  EXPECT_EQ(s->reached, 1u);
  EXPECT_EQ(s->memory_bytes, 4096u + (1 << 16));
  EXPECT_EQ(s->module_bytes, 5000u);
  EXPECT_EQ(s->module_kind, format::ImageKind::kFatbin);
  EXPECT_EQ(s->param_bytes, 24u);
  EXPECT_EQ(s->recorded_ns, 2500u);  // from the kernel row with the launch's correlation id
  EXPECT_EQ(s->file_bytes, FileSize(out.path()).value());
  EXPECT_LT(s->file_bytes, FileSize(in.path()).value());

  auto r = format::SbtReader::Open(out.path());
  ASSERT_TRUE(r.ok());
  auto cap = format::ReadReplayCapture(**r);
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  ASSERT_TRUE(format::ValidateCapture(*cap).ok());
  ASSERT_EQ(cap->launches.size(), 1u);
  const format::LaunchRecord& l = cap->launches[0];
  EXPECT_EQ(l.index, 7u);
  EXPECT_EQ(l.params, Pattern(24, 7));
  EXPECT_EQ(l.param_info.size(), 3u);
  EXPECT_EQ(l.recorded_ns, 2500u);
  EXPECT_EQ(l.correlation_id, 0u);  // no trace rows to point at
  EXPECT_EQ(l.coverage.scope, format::MemoryScope::kReachable);
  ASSERT_EQ(cap->modules.size(), 1u);  // not the other launches' module
  EXPECT_EQ(cap->modules[0].hash, l.module_hash);
  EXPECT_EQ(cap->snapshots.size(), 4u);
  EXPECT_TRUE(cap->stream_ops.empty());
  EXPECT_EQ(cap->info.device_name, "NVIDIA H100 80GB HBM3");
  bool reached = false;
  for (const format::SnapshotRecord& sn : cap->snapshots) {
    auto data = cap->BlobData(sn.hash, "s");
    ASSERT_TRUE(data.ok());
    if (sn.address == 0x7f0000200000 && sn.phase == format::SnapshotPhase::kBefore) {
      reached = sn.origin.source == format::RangeSource::kPointer && sn.origin.last_offset == 0x18;
      EXPECT_EQ(std::vector<uint8_t>(data->begin(), data->end()), Pattern(1 << 16, 7));
    }
  }
  EXPECT_TRUE(reached);
  const std::string text = FormatExtractSummary(out.path(), *s);
  EXPECT_NE(text.find("launch 7 _Z6gatherPPKfPfi"), std::string::npos) << text;
  EXPECT_NE(text.find("module: 4.88 KiB (fatbin)"), std::string::npos) << text;
  EXPECT_NE(text.find("memory: 2 range(s), 68.00 KiB before and 68.00 KiB after (1 reached "
                      "through pointers in memory)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("time in the program: 2.50 us"), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3 (sm_90), driver 13.0"), std::string::npos) << text;
}

TEST(Extract, RefusesAMissingLaunchTheInputAndAnExistingFile) {
  ::tracesmith::testing::TempPath in, out;
  WriteCapture(in.path());
  ExtractOptions o;
  o.launch = 4;
  auto s = ExtractLaunch(in.path(), out.path(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no recorded launch 4 (recorded: 3, 7, 9)"),
            std::string::npos)
      << s.status().ToString();
  EXPECT_FALSE(PathExists(out.path()));
  o.launch = 3;
  EXPECT_FALSE(ExtractLaunch(in.path(), in.path(), o).ok());  // would destroy the capture
  ASSERT_TRUE(ExtractLaunch(in.path(), out.path(), o).ok());
  auto again = ExtractLaunch(in.path(), out.path(), o);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("file exists"), std::string::npos);
  o.overwrite = true;
  EXPECT_TRUE(ExtractLaunch(in.path(), out.path(), o).ok());
}

TEST(Extract, ATruncatedCaptureIsRefusedAndNothingIsWritten) {
  ::tracesmith::testing::TempPath in, cut, out;
  WriteCapture(in.path());
  auto bytes = ReadFileToString(in.path());
  ASSERT_TRUE(bytes.ok());
  bytes->resize(bytes->size() / 2);
  ASSERT_TRUE(WriteStringToFile(cut.path(), *bytes).ok());
  ExtractOptions o;
  o.launch = 9;
  auto s = ExtractLaunch(cut.path(), out.path(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_FALSE(PathExists(out.path()));
}

}  // namespace
}  // namespace tracesmith::replay
