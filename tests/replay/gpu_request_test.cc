// The CPU side of the GPU replayer's entry point (gpu_loader.cc): the option
// pairs a replay refuses, and the progress line's text and fraction.
#include <gtest/gtest.h>

#include <string>

#include "tracesmith/replay/gpu_replayer.h"

namespace tracesmith::replay {
namespace {

TEST(ReplayRequest, RefusesWarmRangesAndRangeWithLaunch) {
  ReplayGpuRequest r;
  r.path = "cap.sbt";
  EXPECT_TRUE(ValidateReplayRequest(r).ok());
  r.flags = kReplayFlagWarm;
  EXPECT_TRUE(ValidateReplayRequest(r).ok());  // warm single launches
  r.range_first = 0;
  r.range_last = 59;
  Status st = ValidateReplayRequest(r);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("--warm times single launches"), std::string::npos) << st.message();
  r.flags = 0;
  EXPECT_TRUE(ValidateReplayRequest(r).ok());  // a cold range
  r.launch = 3;
  EXPECT_EQ(ValidateReplayRequest(r).message(), "--range and --launch exclude each other");
  r.launch = -1;
  r.range_last = -1;  // ends before it starts
  EXPECT_FALSE(ValidateReplayRequest(r).ok());
}

TEST(ReplayRequest, StartsWithItsSize) {
  // The ABI rule: the first field is the size the caller compiled (the
  // library refuses a request smaller than its own).
  ReplayGpuRequest r;
  EXPECT_EQ(r.struct_size, sizeof(ReplayGpuRequest));
  EXPECT_EQ(offsetof(ReplayGpuRequest, struct_size), 0u);
  EXPECT_STREQ(kReplayGpuEntryName, "TracesmithReplayGpuMainV5");
  EXPECT_EQ(r.node, -1);
}

TEST(ReplayProgress, TextAndFraction) {
  ReplayProgress p;
  p.launches_total = 240;
  p.launches_done = 2;
  p.index = 17;
  p.kernel = "_Z12scale_kernelPfif";
  p.replays_total = 10;  // 5 cold + 5 warm
  EXPECT_EQ(ReplayProgressText(p), "launch 17 (3 of 240) _Z12scale_kernelPfif");
  EXPECT_DOUBLE_EQ(ReplayProgressFraction(p), 2.0 / 240);
  p.replays_done = 5;
  EXPECT_DOUBLE_EQ(ReplayProgressFraction(p), 2.5 / 240);
  // A long (mangled) name is cut: the line fits one terminal row.
  const std::string longname(200, 'x');
  p.kernel = longname.c_str();
  EXPECT_EQ(ReplayProgressText(p), "launch 17 (3 of 240) " + std::string(37, 'x') + "...");
  // The last launch, done: 100%, never past it; "N of N", never N+1.
  p.launches_done = 240;
  p.replays_done = 10;
  EXPECT_DOUBLE_EQ(ReplayProgressFraction(p), 1.0);
  EXPECT_EQ(ReplayProgressText(p).rfind("launch 17 (240 of 240) ", 0), 0u);
  // A range replay: the range names itself.
  ReplayProgress range;
  range.launches_total = 1;
  range.kernel = "range 0..59";
  range.range = true;
  range.replays_total = 3;
  range.replays_done = 1;
  EXPECT_EQ(ReplayProgressText(range), "range 0..59");
  EXPECT_DOUBLE_EQ(ReplayProgressFraction(range), 1.0 / 3);
  EXPECT_DOUBLE_EQ(ReplayProgressFraction(ReplayProgress{}), 0.0);
}

}  // namespace
}  // namespace tracesmith::replay
