// The replay report's account of a launch's memory: where each range came
// from, what was left out, and the hint when an output differs.
#include "tracesmith/replay/launch_memory.h"

#include <gtest/gtest.h>

namespace tracesmith::replay {
namespace {

format::SnapshotRecord Before(uint64_t launch, uint64_t address, uint64_t size,
                              format::SnapshotOrigin o = {}) {
  format::SnapshotRecord s;
  s.launch_index = launch;
  s.address = address;
  s.size = size;
  s.origin = o;
  return s;
}

format::SnapshotOrigin Pointer(uint64_t via, uint64_t first, uint64_t last, uint32_t depth) {
  format::SnapshotOrigin o;
  o.source = format::RangeSource::kPointer;
  o.via = via;
  o.first_offset = first;
  o.last_offset = last;
  o.pointers = 1;
  o.depth = depth;
  return o;
}

// A batched GEMM: parameter allocations A (pointer array) and W; three
// buffers reached through A, and one more reached from one of those.
format::ReplayCapture Gemm(format::MemoryScope scope, format::MemoryCoverage coverage = {}) {
  format::ReplayCapture cap;
  format::LaunchRecord l;
  l.index = 4;
  coverage.scope = scope;
  l.coverage = coverage;
  cap.launches.push_back(l);
  const uint64_t a = 0x7f0000200000, w = 0x7f0000000000;
  cap.snapshots = {
      Before(4, a, 256),
      Before(4, w, 1 << 20),
      Before(4, 0x7f0000400000, 4096, Pointer(a, 0x0, 0x0, 1)),
      Before(4, 0x7f0000600000, 4096, Pointer(a, 0x8, 0x8, 1)),
      Before(4, 0x7f0000800000, 4096, Pointer(a, 0x10, 0x78, 1)),
      Before(4, 0x7f0000a00000, 512, Pointer(0x7f0000800000, 0x40, 0x40, 2)),
      Before(5, 0x7f0000c00000, 64),  // another launch's
  };
  format::SnapshotRecord after = Before(4, a, 256);
  after.phase = format::SnapshotPhase::kAfter;
  cap.snapshots.push_back(after);
  return cap;
}

TEST(LaunchMemory, CountsSourcesAndGroupsReachedAllocationsByWhereThePointersAre) {
  format::ReplayCapture cap = Gemm(format::MemoryScope::kReachable);
  LaunchMemory m = DescribeLaunchMemory(cap, cap.launches[0]);
  EXPECT_EQ(m.ranges, 6u);
  EXPECT_EQ(m.from_parameters, 2u);
  EXPECT_EQ(m.reached, 4u);
  EXPECT_EQ(m.reached_bytes, 3 * 4096u + 512);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].via, 2u);  // A is the second range in address order
  EXPECT_EQ(m.groups[0].allocations, 3u);
  EXPECT_EQ(m.groups[0].first_offset, 0u);
  EXPECT_EQ(m.groups[0].last_offset, 0x78u);
  EXPECT_EQ(m.groups[1].via, 5u);
  EXPECT_EQ(m.groups[1].depth, 2u);
  EXPECT_EQ(FormatLaunchMemory(m),
            "  memory: 6 range(s), 1.01 MiB, captured with --replay-memory reachable: 2 from the "
            "parameters, 4 reached through pointers in memory (12.50 KiB)\n"
            "    3 allocations (12.00 KiB) reached through pointers in allocation #2 "
            "(0x7f0000200000) at offsets 0x0..0x78\n"
            "    1 allocation (512 B) reached through pointers in allocation #5 (0x7f0000800000) "
            "at offset 0x40, 2 pointer hops from a parameter\n");
  EXPECT_NE(MissingMemoryHint(m).find("every allocation reachable"), std::string::npos);
}

TEST(LaunchMemory, SaysWhatTheCaptureLeftOutAndHowToGetIt) {
  format::MemoryCoverage c;
  c.ranges_over_budget = 2;
  c.bytes_over_budget = 3ull << 30;
  c.words_unresolved = 7;
  format::ReplayCapture cap = Gemm(format::MemoryScope::kReachable, c);
  LaunchMemory m = DescribeLaunchMemory(cap, cap.launches[0]);
  std::string text = FormatLaunchMemory(m);
  EXPECT_NE(text.find("    NOT recorded: 2 allocation(s) (3.00 GiB) over the --replay-max-mb "
                      "budget, 7 address-like word(s) not looked up\n"),
            std::string::npos)
      << text;
  EXPECT_NE(MissingMemoryHint(m).find("raise --replay-max-mb"), std::string::npos);
}

TEST(LaunchMemory, ParamsCapturesPointToTheDefaultAndOldCapturesSayNothing) {
  format::ReplayCapture cap;
  format::LaunchRecord l;
  l.coverage.scope = format::MemoryScope::kParams;
  cap.launches.push_back(l);
  cap.snapshots = {Before(0, 0x7f0000000000, 64)};
  LaunchMemory m = DescribeLaunchMemory(cap, cap.launches[0]);
  EXPECT_EQ(FormatLaunchMemory(m),
            "  memory: 1 range(s), 64 B, captured with --replay-memory params: 1 from the "
            "parameters\n");
  EXPECT_NE(MissingMemoryHint(m).find("capture again with the default"), std::string::npos);
  cap.launches[0].coverage.scope = format::MemoryScope::kUnknown;  // written before scopes existed
  m = DescribeLaunchMemory(cap, cap.launches[0]);
  EXPECT_EQ(FormatLaunchMemory(m), "");
  EXPECT_EQ(MissingMemoryHint(m), "");
}

}  // namespace
}  // namespace tracesmith::replay

namespace tracesmith::replay {
namespace {

TEST(OutOfDeviceMemory, NamesWhatWasSelectedWhatItNeedsAndWhatToDo) {
  const std::string one =
      OutOfDeviceMemoryText(4, -1, -1, 12, 3, 6ull << 30, 1ull << 30, 80ull << 30);
  EXPECT_EQ(one,
            "not enough device memory to replay launch 4: it needs 6.00 GiB in 3 range(s) at "
            "once (the memory it reads and writes, at the captured addresses), and the GPU has "
            "1.00 GiB free of 80.00 GiB; other processes hold the rest (nvidia-smi lists them)");
  const std::string all =
      OutOfDeviceMemoryText(-1, -1, -1, 12, 40, 90ull << 30, 79ull << 30, 80ull << 30);
  EXPECT_NE(all.find("to replay all 12 recorded launches: replaying them together needs "
                     "90.00 GiB in 40 range(s)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("; replay one launch at a time with --launch N"), std::string::npos) << all;
  const std::string range =
      OutOfDeviceMemoryText(-1, 0, 59, 60, 7, 2ull << 30, 1ull << 30, 2ull << 30);
  EXPECT_NE(range.find("to replay launches 0..59: it needs 2.00 GiB"), std::string::npos) << range;
  EXPECT_EQ(range.find("--launch N"), std::string::npos) << range;
  EXPECT_EQ(range.find("other processes"), std::string::npos) << range;
  const std::string unknown = OutOfDeviceMemoryText(4, -1, -1, 12, 3, 6ull << 30, 0, 0);
  EXPECT_NE(unknown.find("in 3 range(s) at once (the memory it reads and writes, at the captured "
                         "addresses), and the GPU's free memory is unknown (cuMemGetInfo failed)"),
            std::string::npos)
      << unknown;
  EXPECT_EQ(unknown.find("other processes"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace tracesmith::replay
