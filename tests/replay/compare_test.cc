// Output comparison, timing summaries and address-range rounding (the CPU
// parts of GPU replay).
#include <gtest/gtest.h>

#include <cstring>

#include "tracesmith/format/replay_payload.h"
#include "tracesmith/replay/address_ranges.h"
#include "tracesmith/replay/compare.h"

namespace tracesmith::replay {
namespace {

std::vector<uint8_t> Floats(std::vector<float> f) {
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

TEST(CompareTest, IdenticalRanges) {
  auto a = Floats({1, 2, 3});
  CompareResult r = CompareBytes(a, a, 0x1000);
  EXPECT_TRUE(r.identical());
  EXPECT_EQ(r.bytes_compared, 12u);
}

TEST(CompareTest, DifferingFloatsGiveAddressAndErrors) {
  auto want = Floats({1.0f, 2.0f, 4.0f, 8.0f});
  auto got = Floats({1.0f, 2.5f, 4.0f, 7.0f});
  CompareResult r = CompareBytes(want, got, 0x7f0000001000);
  EXPECT_FALSE(r.identical());
  EXPECT_EQ(r.first_diff_address, 0x7f0000001000u + 4 + 2);  // 2.0f vs 2.5f differ in byte 2
  EXPECT_EQ(r.float_words_differing, 2u);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 1.0);   // 8 -> 7
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.25);  // 2 -> 2.5
  EXPECT_GE(r.bytes_differing, 2u);
  CompareResult m;
  m.Merge(r);
  m.Merge(CompareBytes(want, want, 0x10));
  EXPECT_EQ(m.first_diff_address, r.first_diff_address);
  EXPECT_EQ(m.bytes_compared, 32u);
}

TEST(CompareTest, FloatViewFollowsDeviceAlignment) {
  // Range starts 2 bytes before a 4-byte boundary: words start at offset 2.
  std::vector<uint8_t> want(10, 0), got(10, 0);
  float one = 1.0f;
  std::memcpy(&got[2], &one, 4);
  CompareResult r = CompareBytes(want, got, 0x1002 - 4);  // 0xffe: next boundary at +2
  EXPECT_EQ(r.float_words_differing, 1u);
  EXPECT_DOUBLE_EQ(r.max_abs_error, 1.0);
  EXPECT_DOUBLE_EQ(r.max_rel_error, 0.0);  // expected 0: no relative error
}

TEST(CompareTest, LengthMismatchCountsAsDifferent) {
  std::vector<uint8_t> a(8, 1), b(6, 1);
  EXPECT_EQ(CompareBytes(a, b, 0).bytes_differing, 2u);
}

TEST(CompareTest, TimingSummary) {
  TimingStats t = SummarizeTimes({5, 1, 3});
  EXPECT_DOUBLE_EQ(t.median_us, 3);
  EXPECT_DOUBLE_EQ(t.min_us, 1);
  EXPECT_DOUBLE_EQ(t.max_us, 5);
  EXPECT_DOUBLE_EQ(SummarizeTimes({4, 1, 3, 2}).median_us, 2.5);
  EXPECT_DOUBLE_EQ(SummarizeTimes({}).max_us, 0);
}

TEST(CompareTest, TimedSamplesUseCuptiOnlyWhenEveryRunHasIt) {
  TimedSamples s{.event_us = {10, 12, 11}, .cupti_us = {2, 3, 4}};
  TimingStats time, events;
  bool from_cupti = false;
  s.Summarize(&time, &events, &from_cupti);
  EXPECT_TRUE(from_cupti);
  EXPECT_DOUBLE_EQ(time.median_us, 3);
  EXPECT_DOUBLE_EQ(events.median_us, 11);
  s.cupti_us.pop_back();  // one run without a CUPTI record: events for all
  s.Summarize(&time, &events, &from_cupti);
  EXPECT_FALSE(from_cupti);
  EXPECT_DOUBLE_EQ(time.median_us, 11);
  s.cupti_us.clear();
  s.event_us.clear();  // no runs: nothing from CUPTI either
  s.Summarize(&time, &events, &from_cupti);
  EXPECT_FALSE(from_cupti);
  EXPECT_DOUBLE_EQ(time.max_us, 0);
}

TEST(CompareTest, RunVsFirstCountsARunOnceAndMergesItsRanges) {
  LaunchOutcome out;
  std::vector<uint8_t> a(8, 1), b(8, 1), c(8, 1);
  c[3] = 2;
  RunVsFirst same;
  same.Add(CompareBytes(a, b, 0x1000));
  same.Close(&out);
  EXPECT_EQ(out.iterations_differing, 0u);
  EXPECT_EQ(out.vs_first_replay.bytes_compared, 0u);
  RunVsFirst differs;  // two ranges, one of them differs: one run counted
  differs.Add(CompareBytes(a, b, 0x1000));
  differs.Add(CompareBytes(a, c, 0x2000));
  differs.Close(&out);
  EXPECT_EQ(out.iterations_differing, 1u);
  EXPECT_EQ(out.vs_first_replay.bytes_compared, 16u);
  EXPECT_EQ(out.vs_first_replay.bytes_differing, 1u);
  EXPECT_EQ(out.vs_first_replay.first_diff_address, 0x2003u);
}

TEST(CompareTest, OutcomeText) {
  LaunchOutcome o;
  o.index = 3;
  o.function = "scatter_add";
  o.iterations = 20;
  o.iterations_differing = 19;
  o.vs_first_replay.bytes_differing = 7;
  o.vs_capture.bytes_compared = 256;
  std::string s = FormatLaunchOutcome(o);
  EXPECT_NE(s.find("identical to the capture"), std::string::npos) << s;
  EXPECT_NE(s.find("NONDETERMINISTIC: 19 of 20 replays"), std::string::npos) << s;
  EXPECT_NE(s.find("kernel time"), std::string::npos) << s;
  EXPECT_EQ(s.find("launch attributes"), std::string::npos) << s;
  o.attributes = format::LaunchAttributeName(2) + ", " + format::LaunchAttributeName(8);
  s = FormatLaunchOutcome(o);
  EXPECT_NE(s.find("  launch attributes: cooperative, priority\n"), std::string::npos) << s;
  EXPECT_EQ(format::LaunchAttributeName(99), "attribute 99");
}

TEST(CompareTest, SequenceOutcomeTextHasNoPerKernelRatio) {
  LaunchOutcome o;
  o.function = "range 0..59: 60 launches in capture order, one stream";
  o.sequence = true;
  o.iterations = 3;
  o.external_writes = 8;
  o.recorded_ns = 291190;
  o.time.median_us = 130713.2;
  std::string s = FormatLaunchOutcome(o);
  EXPECT_NE(s.find("between launches: 8 image(s) restored"), std::string::npos) << s;
  EXPECT_NE(s.find("sequence time (host clock, issue to completion, image restores included)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("kernels in the program: 291.19 us in all"), std::string::npos) << s;
  EXPECT_EQ(s.find("not compared"), std::string::npos) << s;
  o.ranges_not_compared = 2;
  s = FormatLaunchOutcome(o);
  EXPECT_NE(s.find("final memory: 2 range(s) not compared"), std::string::npos) << s;
  EXPECT_EQ(s.find("replay/program"), std::string::npos) << s;
}

TEST(AddressRangesTest, RoundsAndMerges) {
  const uint64_t g = 2u << 20;
  auto r = CoveringRanges({{0x7f0000300000, 16},    // inside page 1 (0x7f0000200000..)
                           {0x7f0000200010, 0x10},  // same page
                           {0x7f00003ffff0, 0x20},  // crosses into page 2
                           {0x7f0001000000, 1},     // far away
                           {0x7f0005000000, 0}},    // empty: dropped
                          g);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].address, 0x7f0000200000u);
  EXPECT_EQ(r[0].size, 2 * g);
  EXPECT_EQ(r[1].address, 0x7f0001000000u);
  EXPECT_EQ(r[1].size, g);
}

TEST(AddressRangesTest, GroupsRangesByAlignedReservationSpans) {
  const uint64_t M = 1u << 20, chunk = 32 * M;
  const uint64_t base = 0x7f0000000000;                           // chunk-aligned
  auto groups = GroupForReservation({{base + 2 * M, 2 * M},       // chunk 0
                                     {base + 10 * M, 2 * M},      // chunk 0
                                     {base + 30 * M, 4 * M},      // crosses into chunk 1
                                     {base + 40 * M, 2 * M},      // chunk 1: same span
                                     {base + 500 * M, 100 * M}},  // chunks 15..18
                                    chunk);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].span.address, base);
  EXPECT_EQ(groups[0].span.size, 2 * chunk);
  ASSERT_EQ(groups[0].ranges.size(), 4u);
  EXPECT_EQ(groups[0].ranges[2].address, base + 30 * M);
  EXPECT_EQ(groups[1].span.address, base + 480 * M);
  EXPECT_EQ(groups[1].span.size, 4 * chunk);
  ASSERT_EQ(groups[1].ranges.size(), 1u);
  EXPECT_EQ(groups[1].ranges[0].size, 100 * M);
}

}  // namespace
}  // namespace tracesmith::replay
