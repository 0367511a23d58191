// StackCollector's deferred interning: a new stack's provisional id at once,
// its interning on the writer, rows written with final ids.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "chains.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::stacks {
namespace {

using model::kProvisionalStackId;
using testing::RecurseChain;
using testing::RelPcs;

StackCollectorOptions Native(bool defer) {
  StackCollectorOptions o;
  o.mode = StackMode::kNative;
  o.defer_interning = defer;
  return o;
}

// One place, whichever collector: the same native frames for both.
[[gnu::noinline]] uint32_t CaptureDeep(StackCollector& c, int depth) {
  uint32_t id = 0;
  RecurseChain(depth, [&] {
    id = c.CaptureStack();
    return 0;
  });
  asm volatile("" : "+r"(id));
  return id;
}

TEST(DeferredInterning, ANewStackGetsAProvisionalIdAndTheWriterInternsIt) {
  StackCollector deferred(Native(true)), direct(Native(false));
  // One call site (the same frames every time): once through a collector that interns on the
  // thread (every unwind rule known after it: the walks below are whole, not handed off as in
  // deferred_walk_test.cc), twice before the writer ran, once after.
  uint32_t ids[4] = {};
  StackCollectorStats before;
  for (int i = 0; i < 4; ++i) {
    if (i == 2) before = deferred.stats();
    if (i == 3) deferred.ResolveDeferred();
    StackCollector* which = i == 0 ? &direct : &deferred;
    asm volatile("" : "+r"(which));  // (one call instruction for both)
    ids[(i + 3) % 4] = CaptureDeep(*which, 3);
  }
  const uint32_t p = ids[0];
  ASSERT_GE(p, kProvisionalStackId);
  // Nothing interned on the thread: no frame, no node yet.
  EXPECT_EQ(before.nodes, 0u);
  EXPECT_EQ(before.frames, 0u);
  EXPECT_EQ(before.deferred, 1u);
  EXPECT_EQ(before.walks_deferred, 0u);  // (every rule known: the walk was whole)
  EXPECT_EQ(ids[1], p);                  // seen again before the writer ran: the same id
  const uint32_t final_id = deferred.Settled(p);
  ASSERT_NE(final_id, 0u);
  ASSERT_LT(final_id, kProvisionalStackId);
  EXPECT_EQ(ids[2], final_id);  // later captures: the final id
  EXPECT_EQ(deferred.stats().deferred, 1u);
  EXPECT_EQ(deferred.stats().new_stacks, 1u);
  // The same frames as a collector that interns on the thread.
  const uint32_t d = ids[3];
  ASSERT_LT(d, kProvisionalStackId);
  EXPECT_EQ(RelPcs(deferred.FramesOf(final_id)), RelPcs(direct.FramesOf(d)));
  EXPECT_EQ(RelPcs(deferred.FramesOf(p)), RelPcs(direct.FramesOf(d)));  // resolves too
  EXPECT_EQ(deferred.stats().nodes, direct.stats().nodes);
}

TEST(DeferredInterning, RowsAreWrittenWithFinalIdsEvenBeforeTheDrainSettledThem) {
  StackCollector c(Native(true));
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  c.AttachWriter(writer->get());
  const uint32_t drained = CaptureDeep(c, 2);
  c.Drain(writer->get());                   // settles the first
  const uint32_t late = CaptureDeep(c, 4);  // a row names it before any drain (resolved on append)
  ASSERT_GE(drained, kProvisionalStackId);
  ASSERT_GE(late, kProvisionalStackId);
  std::vector<model::KernelEvent> rows(3);
  rows[0].stack_id = drained;
  rows[1].stack_id = late;
  rows[2].stack_id = 0;
  for (const model::KernelEvent& k : rows) (*writer)->Append(k);
  (*writer)->AppendRows(rows.data(), rows.size());  // the bulk path too
  c.Drain(writer->get());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(c.stats().resolved_on_append, 1u);

  auto trace = format::ReadTraceFile(tmp.path());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  const auto& kernels = trace->template Rows<model::KernelEvent>();
  ASSERT_EQ(kernels.size(), 6u);
  const auto& frames = trace->template Rows<model::Frame>();
  for (size_t i = 0; i < kernels.size(); ++i) {
    const uint32_t want = i % 3 == 2 ? 0 : c.Settled(i % 3 == 0 ? drained : late);
    EXPECT_EQ(kernels[i].stack_id, want) << i;
    if (!want) continue;
    ASSERT_LT(want, kProvisionalStackId);
    std::vector<uint32_t> fids = model::StackFrames(*trace, want);
    std::vector<model::Frame> expected = c.FramesOf(want);
    ASSERT_EQ(fids.size(), expected.size()) << i;
    for (size_t f = 0; f < fids.size(); ++f)
      EXPECT_EQ(frames[fids[f] - 1].rel_pc, expected[f].rel_pc);
  }
}

// Without a resolver (a trace rewritten, not a capture), a row's stack id is kept as it is.
TEST(DeferredInterning, AWriterWithoutAResolverKeepsTheValue) {
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  model::KernelEvent k{};
  k.stack_id = kProvisionalStackId + 7;
  (*writer)->Append(k);
  ASSERT_TRUE((*writer)->Close().ok());
  auto trace = format::ReadTraceFile(tmp.path());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->template Rows<model::KernelEvent>().size(), 1u);
  EXPECT_EQ(trace->template Rows<model::KernelEvent>()[0].stack_id, kProvisionalStackId + 7);
}

// Threads capture new stacks (deferred) while the writer drains: every id a thread was given,
// settled, names in the file the frames the thread walked. Run under ThreadSanitizer (label tsan).
TEST(DeferredInterning, ThreadsDeferWhileTheWriterInternsAndDrains) {
  StackCollector c(Native(true));
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  c.AttachWriter(writer->get());
  constexpr int kThreads = 4, kRounds = 30;
  std::vector<std::vector<uint32_t>> ids(kThreads);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        ids[t].push_back(CaptureDeep(c, 2 + (round + t) % 12));
        testing::ChainThroughLibrary(round % 3, [&] {
          ids[t].push_back(c.CaptureStack());
          return 0;
        });
      }
      done.fetch_add(1);
    });
  while (done.load() < kThreads) c.Drain(writer->get());
  for (auto& th : threads) th.join();
  c.Drain(writer->get());
  ASSERT_TRUE((*writer)->Close().ok());
  const StackCollectorStats s = c.stats();
  EXPECT_GT(s.deferred, 0u);
  // Each stack deferred whole is a new one; a walk handed off may be one of those or of
  // another walk's (two threads, or a thread twice, through a new address before the poll).
  EXPECT_LE(s.new_stacks, s.deferred);
  EXPECT_GE(s.new_stacks, s.deferred - s.walks_deferred);

  auto trace = format::ReadTraceFile(tmp.path());
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(trace->template Rows<model::StackNode>().size(), s.nodes);
  for (int t = 0; t < kThreads; ++t)
    for (uint32_t id : ids[t]) {
      const uint32_t final_id = c.Settled(id);
      ASSERT_NE(final_id, 0u);
      ASSERT_LT(final_id, kProvisionalStackId);
      EXPECT_EQ(model::StackFrames(*trace, final_id), c.FrameIdsOf(final_id));
    }
}

}  // namespace
}  // namespace tracesmith::stacks
