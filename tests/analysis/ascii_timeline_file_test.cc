// RenderAsciiTimelineFile (the `timeline` command: events streamed from the
// file, never loaded whole) prints exactly what LoadCompactTrace +
// RenderAsciiTimeline print, whatever the window: clock alignment of several
// processes, inverted and zero-length intervals, unknown (0) times, NVTX-only
// threads, lanes with work only outside the window.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_traces.h"
#include "testing/temp_dir.h"
#include "tracesmith/analysis/ascii_timeline.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::analysis {
namespace {

using testing::TraceBuilder;

// Three processes: two anchored (one drifting), one not; an inverted
// kernel, an instant, a thread with NVTX ranges only, an unknown start.
model::Trace AwkwardTrace() {
  TraceBuilder b(1);
  b.Anchor(1000, 5'000'000);
  b.Kernel("k1", 0, 1, 1100, 1900, 1000, 1050);
  b.Kernel("inverted", 0, 2, 3000, 2500, 1200, 1260);
  b.Kernel("instant", 0, 3, 4000, 4000, 1300, 1320);
  b.Memcpy(model::kCopyHtoD, 1 << 20, 0, 1, 2000, 2600, 1900, 1950);
  b.Nvtx("only_nvtx", 900, 5000, /*tid=*/7);
  b.Pid(2);
  b.Anchor(50'000, 5'000'500);
  b.Anchor(70'000, 5'020'600, model::kClockEnd);
  b.Kernel("k2", 1, 1, 51'000, 52'000, 50'900, 50'950);
  b.Memset(4096, 1, 2, 52'500, 53'000);
  b.Sync(model::kSyncStreamSynchronize, 1, 1, 53'100, 53'900);
  b.Pid(3);  // no anchor: left on its own clock, counted
  b.Kernel("k3", 0, 1, 0, 700, 0, 0);
  b.Kernel("k3", 0, 1, 5'000'100, 5'000'900, 5'000'000, 5'000'050);
  return std::move(b.trace());
}

std::string ViaCompactTrace(const std::string& path, const std::string& from, const std::string& to,
                            const AsciiTimelineOptions& ao) {
  CompactTrace t;
  LoadOptions lo;
  lo.from = from;
  lo.to = to;
  Status st = LoadCompactTrace(path, lo, &t);
  if (!st.ok()) return "error: " + st.message();
  return RenderAsciiTimeline(t, ao);
}

std::string Streamed(const std::string& path, const std::string& from, const std::string& to,
                     const AsciiTimelineOptions& ao) {
  AsciiTimelineFileOptions fo;
  fo.timeline = ao;
  fo.from = from;
  fo.to = to;
  std::string text;
  Status st = RenderAsciiTimelineFile(path, fo, &text);
  if (!st.ok()) return "error: " + st.message();
  return text;
}

void ExpectSameEverywhere(const model::Trace& trace, const std::string& name) {
  ::tracesmith::testing::TempDir dir;
  const std::string path = dir / (name + ".sbt");
  ASSERT_TRUE(format::WriteTraceFile(trace, path).ok());
  const std::vector<std::pair<std::string, std::string>> windows = {
      {"", ""},        {"1us", ""},    {"", "2us"},         {"100ns", "150ns"},
      {"1ns", "60us"}, {"0", "1s"},    {"3us", "1us"},      {"20ms", ""},
      {"bogus", ""},   {"4us", "4us"}, {"4999us", "5001us"}};
  for (const auto& [from, to] : windows)
    for (int width : {20, 80, 160})
      for (bool host : {true, false}) {
        AsciiTimelineOptions ao;
        ao.width = width;
        ao.host_rows = host;
        EXPECT_EQ(Streamed(path, from, to, ao), ViaCompactTrace(path, from, to, ao))
            << name << " --from '" << from << "' --to '" << to << "' width " << width
            << (host ? "" : " --no-host");
      }
}

TEST(AsciiTimelineFile, SameAsCompactTraceOnTheGoldenTraces) {
  ExpectSameEverywhere(testing::OverlappingStreamsTrace(), "overlapping");
  ExpectSameEverywhere(testing::EventWaitTrace(), "event_wait");
  ExpectSameEverywhere(testing::GraphLaunchTrace(), "graph");
  ExpectSameEverywhere(testing::EmptyTrace(), "empty");
  ExpectSameEverywhere(testing::SingleEventTrace(), "single");
  ExpectSameEverywhere(testing::TwoProcessTrace(), "two_process");
  ExpectSameEverywhere(testing::CallSiteTrace(), "call_site");
}

TEST(AsciiTimelineFile, SameAsCompactTraceOnAwkwardTimes) {
  ExpectSameEverywhere(AwkwardTrace(), "awkward");
}

// Process 0, device 0, stream 0: the lane whose key equals a default-made
// one (the streamed timeline's lane caches once took it for "no row").
TEST(AsciiTimelineFile, SameAsCompactTraceForPidZeroDeviceZeroStreamZero) {
  TraceBuilder b(0);
  b.Anchor(1000, 5'000'000);
  b.Kernel("k0", 0, 0, 1100, 1900, 1000, 1050);
  b.Kernel("k1", 0, 0, 2100, 2900, 2000, 2050);
  b.Kernel("other_stream", 0, 1, 3100, 3900, 3000, 3050);
  ExpectSameEverywhere(std::move(b.trace()), "pid0");
}

TEST(AsciiTimelineFile, SameAsCompactTraceOnASyntheticTrace) {
  model::SyntheticOptions so;
  so.kernels = 20'000;
  ExpectSameEverywhere(model::MakeSyntheticTrace(so), "synthetic");
}

}  // namespace
}  // namespace tracesmith::analysis
