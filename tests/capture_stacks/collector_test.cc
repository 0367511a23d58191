// StackCollector: dedup, ids consistent with the rows Drain writes, threads.
#include "tracesmith/stacks/stack_collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "chains.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::stacks {
namespace {

using testing::RecurseChain;

// Two distinct call sites of CaptureStack in one function.
[[gnu::noinline]] uint32_t CaptureAtSite(StackCollector& c, int site) {
  uint32_t id = site == 0 ? c.CaptureStack() : 0;
  asm volatile("" : "+r"(id));
  if (site == 1) id = c.CaptureStack();
  asm volatile("" : "+r"(id));
  return id;
}

StackCollectorOptions Native() {
  StackCollectorOptions o;
  o.mode = StackMode::kNative;
  return o;
}

TEST(StackCollectorTest, SameCallSiteSameIdDifferentSiteSharesPrefix) {
  StackCollector c(Native());
  uint32_t ids[4] = {};
  RecurseChain(3, [&] {
    for (int i = 0; i < 4; ++i) ids[i] = CaptureAtSite(c, i == 3 ? 1 : 0);  // one call site
    return 0;
  });
  uint32_t a1 = ids[0], a2 = ids[2], b = ids[3];
  ASSERT_NE(a1, 0u);
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
  std::vector<model::Frame> fa = c.FramesOf(a1), fb = c.FramesOf(b);
  ASSERT_EQ(fa.size(), fb.size());
  ASSERT_GT(fa.size(), 5u);
  // Only the innermost frame (the call site in CaptureAtSite) differs.
  EXPECT_NE(fa[0].rel_pc, fb[0].rel_pc);
  for (size_t i = 1; i < fa.size(); ++i) EXPECT_EQ(fa[i].rel_pc, fb[i].rel_pc) << i;
  StackCollectorStats s = c.stats();
  EXPECT_EQ(s.new_stacks, 2u);
  // Prefix sharing: the second stack added one node and one frame.
  EXPECT_EQ(s.nodes, fa.size() + 1);
  std::set<uint64_t> distinct;  // recursion repeats return addresses: one frame each
  for (const model::Frame& f : fa) distinct.insert(f.rel_pc);
  EXPECT_EQ(s.frames, distinct.size() + 1);
  EXPECT_GE(s.mappings, 2u);  // test binary + libc at least
  for (const model::Frame& f : fa) {
    EXPECT_EQ(f.kind, model::kFrameNative);
    EXPECT_NE(f.mapping_id, 0u);
  }
}

TEST(StackCollectorTest, ModeNoneAndMaxDepth) {
  StackCollectorOptions none;
  none.mode = StackMode::kNone;
  StackCollector off(none);
  EXPECT_EQ(off.CaptureStack(), 0u);

  StackCollectorOptions shallow = Native();
  shallow.max_depth = 3;
  StackCollector c(shallow);
  RecurseChain(10, [&] {
    EXPECT_EQ(c.FramesOf(c.CaptureStack()).size(), 3u);
    return 0;
  });
}

TEST(StackCollectorTest, TrimsInnermostFramesOfOwnModule) {
  StackCollector full(Native());
  StackCollectorOptions o = Native();
  o.trim_own_module = true;  // the test binary holds the collector: trim up to the library
  StackCollector trimmed(o);
  uint32_t ids[2] = {};
  testing::ChainThroughLibrary(1, [&] {
    for (int i = 0; i < 2; ++i) ids[i] = (i == 0 ? full : trimmed).CaptureStack();
    return 0;
  });
  std::vector<model::Frame> f = full.FramesOf(ids[0]), t = trimmed.FramesOf(ids[1]);
  size_t own = 0;  // innermost frames in the test binary
  while (own < f.size() && f[own].mapping_id == f[0].mapping_id) ++own;
  ASSERT_GT(own, 0u);
  ASSERT_LT(own, f.size());
  ASSERT_EQ(t.size(), f.size() - own);
  for (size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].rel_pc, f[i + own].rel_pc) << i;
}

TEST(StackCollectorTest, ParseMode) {
  EXPECT_EQ(ParseStackMode("mixed").value(), StackMode::kMixed);
  EXPECT_EQ(ParseStackMode("full").value(), StackMode::kFull);
  EXPECT_EQ(ParseStackMode("none").value(), StackMode::kNone);
  EXPECT_STREQ(StackModeName(StackMode::kFull), "full");
  EXPECT_FALSE(ParseStackMode("all").ok());
  EXPECT_STREQ(StackModeName(StackMode::kPython), "python");
}

// The interning tables are sized ahead by the writer (Drain), not grown inside a launch
// callback (issue #41 item 2: 150-180 us of rehash in one CUDA call): six tables sized at the
// start, none again while they stay under half full.
TEST(StackCollectorTest, InterningTablesAreSizedAheadAndNotGrownAgainWhileRoomy) {
  StackCollector c(Native());
  EXPECT_EQ(c.stats().tables_grown, 6u);
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (int depth = 0; depth < 4; ++depth) {
    RecurseChain(depth, [&] { return int(CaptureAtSite(c, depth % 2)); });
    c.Drain(writer->get());
  }
  EXPECT_GT(c.stats().nodes, 4u);
  EXPECT_EQ(c.stats().tables_grown, 6u);
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST(StackCollectorTest, DrainedRowsReproduceEveryStack) {
  StackCollector c(Native());
  std::vector<uint32_t> ids;
  std::vector<std::vector<model::Frame>> expected;
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (int depth = 0; depth < 6; ++depth) {
    RecurseChain(depth, [&] {
      ids.push_back(CaptureAtSite(c, depth % 2));
      return 0;
    });
    expected.push_back(c.FramesOf(ids.back()));
    if (depth == 2) c.Drain(writer->get());  // drains interleave with captures
  }
  c.Drain(writer->get());
  c.Drain(writer->get());  // nothing new: appends nothing
  ASSERT_TRUE((*writer)->Close().ok());

  auto trace = format::ReadTraceFile(tmp.path());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto& frames = trace->template Rows<model::Frame>();
  const auto& mappings = trace->template Rows<model::Mapping>();
  EXPECT_EQ(frames.size(), c.stats().frames);
  EXPECT_EQ(trace->template Rows<model::StackNode>().size(), c.stats().nodes);
  for (size_t i = 0; i < mappings.size(); ++i) {
    EXPECT_EQ(mappings[i].mapping_id, i + 1);
    EXPECT_FALSE(trace->strings.Get(mappings[i].path_id).empty());
    EXPECT_LT(mappings[i].start, mappings[i].end);
  }
  for (size_t s = 0; s < ids.size(); ++s) {
    std::vector<uint32_t> fids = model::StackFrames(*trace, ids[s]);
    ASSERT_EQ(fids.size(), expected[s].size()) << "stack " << s;
    for (size_t i = 0; i < fids.size(); ++i) {
      ASSERT_LE(fids[i], frames.size());
      EXPECT_EQ(frames[fids[i] - 1].rel_pc, expected[s][i].rel_pc);
      EXPECT_EQ(frames[fids[i] - 1].mapping_id, expected[s][i].mapping_id);
    }
  }
}

TEST(StackCollectorTest, ThreadsAgreeOnIds) {
  StackCollector c(Native());
  constexpr int kThreads = 4, kIterations = 20000;
  std::vector<std::set<uint32_t>> seen(kThreads * 2);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) {
      }
      RecurseChain(4, [&] {
        for (int i = 0; i < kIterations; ++i) seen[t * 2 + i % 2].insert(CaptureAtSite(c, i % 2));
        return 0;
      });
    });
  }
  go = true;
  for (auto& th : threads) th.join();
  // Each site: one id per thread. The threads' stacks differ only below
  // the thread entry, so ids are per thread, but stable within a thread.
  std::set<uint32_t> all;
  for (int k = 0; k < kThreads * 2; ++k) {
    EXPECT_EQ(seen[k].size(), 1u) << k;
    all.insert(seen[k].begin(), seen[k].end());
  }
  EXPECT_EQ(c.stats().new_stacks, all.size());
  EXPECT_LE(all.size(), size_t(kThreads * 2));
}

// Several threads capture stacks, many of them new (the slow path interns
// frames and queues rows; some run through a library unwound with CFI, so
// threads compute and cache unwind rules at once), while the writer thread
// drains the new rows into a file and reads the stats. The file then holds
// every stack any thread was given, frame for frame. Run under
// ThreadSanitizer (label tsan).
TEST(StackCollectorTest, ThreadsCaptureNewStacksWhileTheWriterDrains) {
  StackCollector c(Native());
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  constexpr int kThreads = 4, kRounds = 50, kDepths = 6;
  struct Captured {
    uint32_t id;
    std::vector<model::Frame> frames;
  };
  std::vector<std::vector<Captured>> captured(kThreads);
  std::atomic<bool> go{false};
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round) {
        // kDepths places, the same each round, and one new place in each of
        // the first 20 rounds: first sightings go on while the writer drains.
        for (int depth = 0; depth <= kDepths; ++depth) {
          uint32_t id = 0;
          auto leaf = [&] {
            id = CaptureAtSite(c, (depth + t) % 2);
            return 0;
          };
          if (depth == kDepths)
            RecurseChain(8 + round % 20, leaf);
          else if (depth % 3 == 0)
            testing::ChainThroughLibrary(depth % 2, leaf);
          else
            RecurseChain(depth + t, leaf);
          ASSERT_NE(id, 0u);
          if (depth < kDepths && (round == 0 || round == kRounds - 1))
            captured[t].push_back({id, c.FramesOf(id)});
        }
      }
      done.fetch_add(1);
    });
  }
  go = true;
  while (done.load() < kThreads) {
    c.Drain(writer->get());
    StackCollectorStats s = c.stats();
    EXPECT_LE(s.new_stacks, s.nodes);
  }
  for (auto& th : threads) th.join();
  c.Drain(writer->get());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_GE(c.stats().new_stacks, uint64_t{kThreads} * (kDepths + 20) / 2);

  auto trace = format::ReadTraceFile(tmp.path());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto& frames = trace->template Rows<model::Frame>();
  EXPECT_EQ(frames.size(), c.stats().frames);
  EXPECT_EQ(trace->template Rows<model::StackNode>().size(), c.stats().nodes);
  for (int t = 0; t < kThreads; ++t) {
    for (size_t k = 0; k < captured[t].size(); ++k) {
      const Captured& cap = captured[t][k];
      // The same place in the first and the last round: the same id.
      if (k >= kDepths) {
        EXPECT_EQ(cap.id, captured[t][k - kDepths].id) << t << " " << k;
      }
      std::vector<uint32_t> fids = model::StackFrames(*trace, cap.id);
      ASSERT_EQ(fids.size(), cap.frames.size()) << "thread " << t << " stack " << k;
      for (size_t i = 0; i < fids.size(); ++i) {
        ASSERT_LE(fids[i], frames.size());
        EXPECT_EQ(frames[fids[i] - 1].rel_pc, cap.frames[i].rel_pc);
        EXPECT_EQ(frames[fids[i] - 1].mapping_id, cap.frames[i].mapping_id);
      }
    }
  }
}

}  // namespace
}  // namespace tracesmith::stacks

namespace tracesmith::stacks {
namespace {

// A thread's first walk maps its walk memo and computes rules for new
// return addresses (first-time work, accounted apart): each timed part
// leaves out exactly the first-time work done inside it, so neither goes
// below zero (an unsigned wrap read as ~10^19 ticks).
TEST(StackCollectorTest, TimedPartsOfAThreadsFirstWalkLeaveOutFirstTimeWork) {
  for (StackMode mode : {StackMode::kNative, StackMode::kMixed, StackMode::kFull}) {
    StackCollectorOptions options;
    options.mode = mode;
    StackCollector c(options);
    StackTiming timing;
    std::thread([&] {
      testing::RecurseChain(8, [&] { return int(c.CaptureStack(&timing)); });
    }).join();
    SCOPED_TRACE(StackModeName(mode));
    const uint64_t kSecondOfTicks = uint64_t(1e10);  // (at most a 10 GHz counter)
    EXPECT_LT(timing.unwind_ticks, kSecondOfTicks);
    EXPECT_LT(timing.python_ticks, kSecondOfTicks);
    EXPECT_GE(timing.native_frames, 9);
  }
}

}  // namespace
}  // namespace tracesmith::stacks
