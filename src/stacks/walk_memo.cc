#include "walk_memo.h"

#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>

#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/base/hot_path.h"

namespace tracesmith::stacks {
namespace {

std::atomic<bool> g_enabled{true};
std::atomic<uint64_t> g_hits{0}, g_partial{0}, g_misses{0}, g_frames_read{0}, g_frames_walked{0};

// Per thread: nullptr = not mapped yet; kGone = exiting or unmappable.
WalkMemo* const kGone = reinterpret_cast<WalkMemo*>(uintptr_t{1});
thread_local WalkMemo* t_memo = nullptr;

pthread_key_t g_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void Flush(WalkMemo* m) {
  g_hits.fetch_add(m->pending_hits, std::memory_order_relaxed);
  g_partial.fetch_add(m->pending_partial, std::memory_order_relaxed);
  g_misses.fetch_add(m->pending_misses, std::memory_order_relaxed);
  g_frames_read.fetch_add(m->pending_frames_read, std::memory_order_relaxed);
  g_frames_walked.fetch_add(m->pending_frames_walked, std::memory_order_relaxed);
  m->pending_hits = m->pending_partial = m->pending_misses = 0;
  m->pending_frames_read = m->pending_frames_walked = 0;
}

// Thread exit: the counts are kept, the mapping goes; a walk later in the
// thread's teardown runs without the memo.
void Unmap(void* p) {
  auto* m = static_cast<WalkMemo*>(p);
  t_memo = kGone;
  if (!m) return;
  Flush(m);
  munmap(m, sizeof(WalkMemo));
}

void MakeKey() {
  if (pthread_key_create(&g_key, Unmap) != 0) g_key = pthread_key_t(-1);
}

// Memos mapped and populated ahead by PrepareWalkMemos (the capture's writer
// thread), taken by threads' first walks: populating one here, ~170 pages
// zeroed, cost a thread's first launch 200-400 us (docs/benchmarks.md). Two:
// threads that start launching at once (a data loader's, autograd's) are few.
constexpr int kReadyMemos = 2;
std::atomic<WalkMemo*> g_ready[kReadyMemos];
std::atomic<uint64_t> g_memos_ready_taken{0}, g_memos_mapped_here{0};

// mmap and pthread_setspecific (key < PTHREAD_KEY_2NDLEVEL_SIZE: no
// allocation) may run in a signal handler. A memo prepared ahead when there
// is one; else one mapped here, not populated: its pages are faulted in by
// the walks that first use them (~0.5 us each, in as many launches), not all
// ~170 at once.
[[gnu::cold, gnu::noinline]] WalkMemo* Map() {
  FirstTimeWork first_time(FirstTimeKind::kMemo);
  pthread_once(&g_key_once, MakeKey);
  if (g_key == pthread_key_t(-1)) return t_memo = kGone;
  void* p = nullptr;
  for (auto& ready : g_ready)
    if ((p = ready.exchange(nullptr, std::memory_order_acquire))) break;
  if (p) {
    g_memos_ready_taken.fetch_add(1, std::memory_order_relaxed);
  } else {
    p = mmap(nullptr, sizeof(WalkMemo), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return t_memo = kGone;
    g_memos_mapped_here.fetch_add(1, std::memory_order_relaxed);
  }
  auto* m = static_cast<WalkMemo*>(p);  // zero pages: an empty memo
  if (pthread_setspecific(g_key, m) != 0) {
    munmap(p, sizeof(WalkMemo));
    return t_memo = kGone;
  }
  return t_memo = m;
}

}  // namespace

void PrepareWalkMemos() {
  for (auto& ready : g_ready) {
    if (ready.load(std::memory_order_relaxed)) continue;
    void* p = mmap(nullptr, sizeof(WalkMemo), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) return;
    WalkMemo* expected = nullptr;
    if (!ready.compare_exchange_strong(expected, static_cast<WalkMemo*>(p),
                                       std::memory_order_release))
      munmap(p, sizeof(WalkMemo));
  }
}

WalkMemoCounts GetWalkMemoCounts() {
  return {g_memos_ready_taken.load(std::memory_order_relaxed),
          g_memos_mapped_here.load(std::memory_order_relaxed)};
}

TS_HOT WalkMemo* MemoAcquire() {
  if (!g_enabled.load(std::memory_order_relaxed)) return nullptr;
  WalkMemo* m = t_memo;
  if (__builtin_expect(m == nullptr, 0)) m = Map();
  if (m == kGone || m->busy) return nullptr;
  m->busy = true;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return m;
}

TS_HOT void MemoRelease(WalkMemo* memo) {
  if (!memo) return;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  memo->busy = false;
}

TS_HOT void MemoCount(WalkMemo* m, MemoOutcome outcome, int frames_read, int frames_walked) {
  switch (outcome) {
    case MemoOutcome::kHit:
      ++m->pending_hits;
      break;
    case MemoOutcome::kPartial:
      ++m->pending_partial;
      break;
    case MemoOutcome::kMiss:
      ++m->pending_misses;
      break;
  }
  m->pending_frames_read += uint64_t(frames_read);
  m->pending_frames_walked += uint64_t(frames_walked);
  if (((m->pending_hits + m->pending_partial + m->pending_misses) & 63) == 0) Flush(m);
}

const MemoEntry* MemoStore(WalkMemo* m, uint64_t cfa, uint64_t ra, uint64_t rbp,
                           const MemoStep* steps, int n, bool ends_at_rule) {
  const int set_index = MemoSet(cfa, ra);
  MemoEntry* set = &m->entries[set_index * kMemoWays];
  int victim = 0;
  for (int w = 0; w < kMemoWays; ++w) {
    if (set[w].ra == 0) {
      victim = w;
      break;
    }
    if (set[w].stamp < set[victim].stamp) victim = w;
  }
  if (n > kMemoSteps) n = kMemoSteps;
  MemoEntry* e = &set[victim];
  e->cfa = cfa;
  e->ra = ra;
  e->rbp = rbp;
  e->n = uint16_t(n);
  e->ends_at_rule = ends_at_rule;
  e->stamp = ++m->clock;
  e->serial = ++m->stores;
  std::memcpy(e->steps, steps, sizeof(MemoStep) * size_t(n));
  m->tags[set_index].cfa[victim] = cfa;
  m->tags[set_index].ra[victim] = ra;
  return e;
}

MemoTotals GetMemoTotals() {
  MemoTotals t;
  WalkMemo* m = t_memo;
  if (m && m != kGone) {
    t.hits = m->pending_hits;
    t.partial = m->pending_partial;
    t.misses = m->pending_misses;
    t.frames_read = m->pending_frames_read;
    t.frames_walked = m->pending_frames_walked;
  }
  t.hits += g_hits.load(std::memory_order_relaxed);
  t.partial += g_partial.load(std::memory_order_relaxed);
  t.misses += g_misses.load(std::memory_order_relaxed);
  t.frames_read += g_frames_read.load(std::memory_order_relaxed);
  t.frames_walked += g_frames_walked.load(std::memory_order_relaxed);
  return t;
}

void SetWalkMemoEnabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace tracesmith::stacks
