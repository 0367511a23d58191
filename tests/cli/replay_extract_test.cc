// `tracesmith replay CAP --extract N -o FILE`: the one-launch reproducer
// from the command line (the library is tested in tests/replay/extract_test.cc).
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "testing/temp_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith {
namespace {

// Two recorded launches (2 and 5), each with one 8 KiB range.
void WriteCapture(const std::string& path) {
  auto w = format::SbtWriter::Open(path);
  ASSERT_TRUE(w.ok());
  format::ReplayPayloadWriter p(w->get());
  ASSERT_TRUE(p.WriteCaptureInfo({"NVIDIA H100 80GB HBM3", 9, 0, 13000, "test"}).ok());
  std::vector<uint8_t> image(2048, 0x11), memory(8192, 0x22);
  const uint64_t module = p.AddModule(image, format::ImageKind::kCubin, "m").value();
  for (uint64_t index : {2, 5}) {
    format::LaunchRecord l;
    l.index = index;
    l.module_hash = module;
    l.function = "_Z4stepPf";
    l.params = std::vector<uint8_t>(8, 0);
    l.param_info = {{0, 8}};
    l.snapshot_ranges = 1;
    ASSERT_TRUE(p.AddLaunch(l).ok());
    for (auto phase : {format::SnapshotPhase::kBefore, format::SnapshotPhase::kAfter})
      ASSERT_TRUE(p.AddSnapshot(index, phase, 0x7f0000000000 + index * 0x200000, memory).ok());
  }
  ASSERT_TRUE((*w)->Close().ok());
}

TEST(ReplayExtract, WritesTheReproducerAndSaysWhatItHolds) {
  testing::TempPath cap, out;
  WriteCapture(cap.path());
  Result r = RunTracesmith("replay " + cap.path() + " --extract 5 -o " + out.path());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("wrote " + out.path()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("launch 5 _Z4stepPf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory: 1 range(s), 8.00 KiB before and 8.00 KiB after"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("replay it with: tracesmith replay " + out.path()), std::string::npos);
  EXPECT_TRUE(PathExists(out.path()));
  // The reproducer is a capture like any other: its one launch can be
  // extracted again (and --dry-run-free commands read it).
  testing::TempPath again;
  r = RunTracesmith("replay " + out.path() + " --extract 5 -o " + again.path());
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(ReplayExtract, ClearErrorsAndNothingWritten) {
  testing::TempPath cap, out;
  WriteCapture(cap.path());
  Result r = RunTracesmith("replay " + cap.path() + " --extract 3 -o " + out.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("no recorded launch 3 (recorded: 2, 5)"), std::string::npos) << r.out;
  EXPECT_FALSE(PathExists(out.path()));
  r = RunTracesmith("replay " + cap.path() + " --extract 2");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--extract needs -o FILE"), std::string::npos) << r.out;
  r = RunTracesmith("replay " + cap.path() + " --extract 2 --json -o " + out.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("replays nothing"), std::string::npos) << r.out;
  r = RunTracesmith("replay " + cap.path() + " -o " + out.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("-o is the reproducer written by --extract N"), std::string::npos) << r.out;
  ASSERT_EQ(RunTracesmith("replay " + cap.path() + " --extract 2 -o " + out.path()).status, 0);
  r = RunTracesmith("replay " + cap.path() + " --extract 2 -o " + out.path());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("file exists"), std::string::npos) << r.out;
  EXPECT_EQ(RunTracesmith("replay " + cap.path() + " --extract 2 --force -o " + out.path()).status,
            0);
}

}  // namespace
}  // namespace tracesmith
