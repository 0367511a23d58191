// StackCollector's deferred walks: a walk that meets a return address without
// an unwind rule stops there, and the writer finishes it from a copy of the
// stack (stack_collector_walks.cc). Fresh copies of the test library give
// return addresses no walk has seen.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "chains.h"
#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/model/records.h"
#include "tracesmith/stacks/stack_collector.h"
#include "tracesmith/stacks/unwinder.h"

namespace tracesmith::stacks {
namespace {

using model::kProvisionalStackId;
using testing::FreshLibrary;
using testing::RelPcs;

StackCollectorOptions Native(bool defer, size_t copy_bytes = size_t{2} << 20) {
  StackCollectorOptions o;
  o.mode = StackMode::kNative;
  o.defer_interning = defer;
  o.walk_copy_bytes = copy_bytes;
  return o;
}

// One call instruction for every collector: the same innermost frame.
[[gnu::noinline]] uint32_t CaptureHere(StackCollector* c) {
  asm volatile("" : "+r"(c));
  uint32_t id = c->CaptureStack();
  asm volatile("" : "+r"(id));
  return id;
}

uint64_t RulePieces() {
  return g_first_time_kind_events[int(FirstTimeKind::kRule)].load(std::memory_order_relaxed);
}

TEST(DeferredWalks, ANewReturnAddressEndsTheWalkAndTheWriterFinishesItFromACopy) {
  FreshLibrary lib("cold");
  ASSERT_TRUE(lib.ok()) << dlerror();
  StackCollector deferred(Native(true)), direct(Native(false));
  (void)CaptureHere(&direct);  // the rules of the capture's own frames (skipped) known
  uint32_t ids[2] = {};
  uint64_t rules[2] = {};
  StackCollectorStats before;
  lib.Through(6, [&] {
    // One call site for both: the deferred capture, then the same stack walked whole on this
    // thread after the writer's poll (ResolveDeferred: the walk finished, the stack interned).
    int rounds = 2;
    asm volatile("" : "+r"(rounds));  // (not unrolled: one call instruction)
    for (int i = 0; i < rounds; ++i) {
      if (i == 1) {
        before = deferred.stats();
        deferred.ResolveDeferred();
      }
      const uint64_t r0 = RulePieces();
      ids[i] = CaptureHere(i == 0 ? &deferred : &direct);
      rules[i] = RulePieces() - r0;
    }
  });
  const uint32_t provisional = ids[0], later = ids[1];
  const uint64_t rules_in_capture = rules[0], rules_after_writer = rules[1];
  ASSERT_GE(provisional, kProvisionalStackId);
  EXPECT_EQ(before.walks_deferred, 1u);
  EXPECT_EQ(before.deferred, 1u);
  EXPECT_EQ(before.nodes, 0u);  // nothing interned on the thread
  // The walk stopped at its first new return address: no rule computed on the thread.
  EXPECT_EQ(rules_in_capture, 0u);
  // The writer computed (and cached) every rule the rest of the walk needed.
  EXPECT_EQ(rules_after_writer, 0u);
  const uint32_t final_id = deferred.Settled(provisional);
  ASSERT_NE(final_id, 0u);
  ASSERT_LT(final_id, kProvisionalStackId);
  // The frames a whole walk on the thread finds, through the library's 7 frames and beyond.
  const std::vector<uint64_t> walked = RelPcs(direct.FramesOf(later));
  EXPECT_GT(walked.size(), 8u);
  EXPECT_EQ(RelPcs(deferred.FramesOf(final_id)), walked);
  const StackCollectorStats after = deferred.stats();
  EXPECT_EQ(after.new_stacks, 1u);
  EXPECT_EQ(after.walks_cut, 0u);
  EXPECT_EQ(after.walks_finished_on_thread, 0u);
  EXPECT_GT(after.walk_bytes_read_max, 0u);
}

TEST(DeferredWalks, AStackSeenAgainBeforeTheWriterRanSettlesToTheSameId) {
  FreshLibrary lib("again");
  ASSERT_TRUE(lib.ok()) << dlerror();
  StackCollector c(Native(true));
  uint32_t ids[3] = {};
  lib.Through(5, [&] {
    // One call site. The second time, the first new address is pending: its rule is computed
    // here and the walk stops at the next one. The writer then finishes both walks.
    int rounds = 3;
    asm volatile("" : "+r"(rounds));  // (not unrolled: one call instruction)
    for (int i = 0; i < rounds; ++i) {
      if (i == 2) c.ResolveDeferred();
      ids[i] = CaptureHere(&c);
    }
  });
  const uint32_t first = ids[0], second = ids[1], third = ids[2];
  ASSERT_GE(first, kProvisionalStackId);
  ASSERT_GE(second, kProvisionalStackId);
  const uint32_t id = c.Settled(first);
  ASSERT_LT(id, kProvisionalStackId);
  EXPECT_EQ(c.Settled(second), id);
  EXPECT_EQ(third, id);  // walked whole now (every rule known), found in the table
  EXPECT_EQ(c.stats().new_stacks, 1u);
}

TEST(DeferredWalks, WithoutRoomForTheCopyTheWalkIsFinishedOnItsThread) {
  FreshLibrary lib("noroom");
  ASSERT_TRUE(lib.ok()) << dlerror();
  // (One word: no copy fits.)
  StackCollector small(Native(true, /*copy_bytes=*/8)), direct(Native(false));
  uint32_t ids[2] = {};
  uint64_t rules_of[2] = {};
  lib.Through(4, [&] {
    int rounds = 2;
    asm volatile("" : "+r"(rounds));  // (not unrolled: one call instruction)
    for (int i = 0; i < rounds; ++i) {
      const uint64_t r0 = RulePieces();
      ids[i] = CaptureHere(i == 0 ? &small : &direct);
      rules_of[i] = RulePieces() - r0;
    }
  });
  const uint32_t id = ids[0], d = ids[1];
  const uint64_t rules = rules_of[0];
  const StackCollectorStats s = small.stats();
  EXPECT_EQ(s.walks_deferred, 0u);
  EXPECT_EQ(s.walks_finished_on_thread, 1u);
  EXPECT_GT(rules, 0u);  // the rules computed here
  ASSERT_NE(id, 0u);
  small.ResolveDeferred();
  EXPECT_EQ(RelPcs(small.FramesOf(small.Settled(id))), RelPcs(direct.FramesOf(d)));
}

// Without the thread's walk memo (turned off, or taken by a walk the thread interrupted) a walk
// is handed off the same way.
TEST(DeferredWalks, AWalkWithoutTheMemoIsHandedOffToo) {
  FreshLibrary lib("nomemo");
  ASSERT_TRUE(lib.ok()) << dlerror();
  StackCollector deferred(Native(true)), direct(Native(false));
  (void)CaptureHere(&direct);
  uint32_t ids[2] = {};
  SetWalkMemoEnabled(false);
  lib.Through(3, [&] {
    int rounds = 2;
    asm volatile("" : "+r"(rounds));  // (not unrolled: one call instruction)
    for (int i = 0; i < rounds; ++i) {
      if (i == 1) deferred.ResolveDeferred();
      ids[i] = CaptureHere(i == 0 ? &deferred : &direct);
    }
  });
  SetWalkMemoEnabled(true);
  EXPECT_EQ(deferred.stats().walks_deferred, 1u);
  ASSERT_GE(ids[0], kProvisionalStackId);
  const uint32_t final_id = deferred.Settled(ids[0]);
  ASSERT_LT(final_id, kProvisionalStackId);
  EXPECT_EQ(RelPcs(deferred.FramesOf(final_id)), RelPcs(direct.FramesOf(ids[1])));
}

// Threads walk through a library no walk has seen (their walks handed off, or finished on the
// thread where another claimed the address) while the writer resolves: every id settles to the
// frames a whole walk on the thread finds. Run under ThreadSanitizer (label tsan).
TEST(DeferredWalks, ThreadsHandWalksOffWhileTheWriterFinishesThem) {
  FreshLibrary lib("threads");
  ASSERT_TRUE(lib.ok()) << dlerror();
  StackCollector c(Native(true)), direct(Native(false));
  constexpr int kThreads = 4, kDepths = 6;
  // Per thread, per depth: the id the deferring collector gave, then, once the writer settled
  // it, the id of the same walk (same thread, same call site) done whole on the thread.
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(2 * kDepths));
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      int rounds = 2;
      asm volatile("" : "+r"(rounds));  // (not unrolled: one call site for both collectors)
      for (int round = 0; round < rounds; ++round) {
        StackCollector* which = round == 0 ? &c : &direct;
        if (round == 1)  // (the main thread resolves until every thread is done)
          for (int d = 0; d < kDepths; ++d)
            while (c.Settled(ids[t][d]) >= kProvisionalStackId) std::this_thread::yield();
        for (int d = 0; d < kDepths; ++d)
          lib.Through(1 + d, [&] { ids[t][round * kDepths + d] = CaptureHere(which); });
      }
      done.fetch_add(1);
    });
  while (done.load() < kThreads) c.ResolveDeferred();
  for (auto& th : threads) th.join();
  const StackCollectorStats s = c.stats();
#if defined(__SANITIZE_THREAD__)
  // (ThreadSanitizer's static TLS puts glibc's top of a thread's stack over 128 KiB above its
  // walks: they are finished on their threads, after claiming the new addresses.)
  EXPECT_GT(s.walks_deferred + s.walks_finished_on_thread, 0u);
#else
  EXPECT_GT(s.walks_deferred, 0u);
#endif
  EXPECT_EQ(s.walks_cut, 0u);
  for (int t = 0; t < kThreads; ++t)
    for (int d = 0; d < kDepths; ++d) {
      const uint32_t settled = c.Settled(ids[t][d]);
      ASSERT_LT(settled, kProvisionalStackId);
      EXPECT_EQ(RelPcs(c.FramesOf(settled)), RelPcs(direct.FramesOf(ids[t][kDepths + d])))
          << "thread " << t << " depth " << d;
    }
}

}  // namespace
}  // namespace tracesmith::stacks
