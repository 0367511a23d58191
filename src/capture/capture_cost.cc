#include "tracesmith/capture/capture_cost.h"
#include "tracesmith/base/statistics.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include <sys/resource.h>
#include <unistd.h>

namespace tracesmith::capture {
namespace {

std::mutex g_threads_mu;
std::vector<ThreadCost*>* g_threads = nullptr;  // never freed: threads outlive captures

// A bucket's representative tick count: its geometric middle (exact below 4).
double BucketMiddle(int b) {
  double lo = double(CostBucketStart(b));
  if (b < 4) return lo;
  double hi = b + 1 < kCostBuckets ? double(CostBucketStart(b + 1)) : 2 * lo;
  return std::sqrt(lo * hi);
}

// The tick count a quantile q of a histogram falls at.
// The nearest rank over the buckets (base/statistics.h).
double HistogramQuantile(const uint64_t* hist, uint64_t total, double q) {
  const uint64_t rank = NearestRankIndex(total, q) + 1;
  uint64_t seen = 0;
  for (int b = 0; b < kCostBuckets; ++b) {
    seen += hist[b];
    if (seen >= rank) return BucketMiddle(b);
  }
  return 0;
}

}  // namespace

thread_local ThreadCost* ThreadCost::t_cost = nullptr;

const char* CostSiteName(CostSite site) {
  switch (site) {
    case CostSite::kLaunch:
      return "launch";
    case CostSite::kCopy:
      return "copy";
    case CostSite::kMemset:
      return "memset";
    case CostSite::kGraph:
      return "graph";
    case CostSite::kSync:
      return "sync";
    case CostSite::kOther:
      return "other";
    case CostSite::kBuffer:
      return "buffer";
    case CostSite::kDriverRow:
      return "driver_exit";
    case CostSite::kAlloc:
      return "alloc";
    case CostSite::kStack:
      return "stack";
    case CostSite::kStackUnwind:
      return "stack.unwind";
    case CostSite::kStackPython:
      return "stack.python";
    case CostSite::kStackRewalk:
      return "stack.rewalk";
    case CostSite::kStackCopy:
      return "stack.copy";
    case CostSite::kCount:
      break;
  }
  return "?";
}

const char* SlowClassName(SlowClass c) {
  switch (c) {
    case SlowClass::kPreempted:
      return "preempted";
    case SlowClass::kBlocked:
      return "blocked";
    case SlowClass::kFaulted:
      return "faulted";
    case SlowClass::kNone:
      return "unexplained";
    case SlowClass::kInterrupted:
      return "interrupted";
    case SlowClass::kCount:
      break;
  }
  return "?";
}

ThreadUsage ThreadUsage::Read() {
  rusage r{};
  getrusage(RUSAGE_THREAD, &r);
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ThreadUsage{r.ru_nvcsw, r.ru_nivcsw, r.ru_minflt, r.ru_majflt,
                     uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec)};
}

void SlowCallProbe::Enable(bool enable) {
  on.store(false, std::memory_order_relaxed);
  min_ticks.store(~uint64_t(0), std::memory_order_relaxed);
  if (!enable) return;
  TickRate rate = TickRate::Start();
  usleep(2000);
  min_ticks.store(uint64_t(100000 / rate.NsPerTick()), std::memory_order_relaxed);
  ns_per_tick.store(rate.NsPerTick(), std::memory_order_relaxed);
  on.store(true, std::memory_order_relaxed);
}

void ThreadCost::ClassifySlow(CostSite site, const ThreadUsage& at_entry, uint64_t ticks) {
  const ThreadUsage now = ThreadUsage::Read();
  const double wall_ns = double(ticks) * SlowCallProbe::ns_per_tick.load(std::memory_order_relaxed);
  SlowClass c = SlowClass::kNone;
  if (now.nivcsw != at_entry.nivcsw)
    c = SlowClass::kPreempted;
  else if (now.nvcsw != at_entry.nvcsw)
    c = SlowClass::kBlocked;
  else if (now.minflt != at_entry.minflt || now.majflt != at_entry.majflt)
    c = SlowClass::kFaulted;
  else if (double(now.cpu_ns - at_entry.cpu_ns) < wall_ns / 2)
    c = SlowClass::kInterrupted;
  Bump(slow[int(site)][int(c)], 1);
}

ThreadCost* ThreadCost::Register() {
  auto* t = new ThreadCost();
  // Different draws per thread: threads started together do not sample in step.
  t->rng ^= uint32_t(reinterpret_cast<uintptr_t>(t) >> 4) | 1u;
  std::lock_guard<std::mutex> lock(g_threads_mu);
  if (!g_threads) g_threads = new std::vector<ThreadCost*>();
  g_threads->push_back(t);
  t_cost = t;
  return t;
}

std::vector<CostStat> CollectCostStats(double ns_per_tick, const WriterCost& writer) {
  uint64_t calls[kCostSites] = {}, sampled[kCostSites] = {}, ticks[kCostSites] = {};
  uint64_t max_ticks[kCostSites] = {};
  uint64_t slow_calls[kCostSites][kSlowClasses] = {};
  uint64_t fn = 0, fp = 0, copied = 0;
  std::vector<uint64_t> hist(size_t(kCostSites) * kCostBuckets, 0);
  {
    std::lock_guard<std::mutex> lock(g_threads_mu);
    if (g_threads) {
      for (const ThreadCost* t : *g_threads) {
        for (int i = 0; i < kCostSites; ++i) {
          calls[i] += t->calls[i].load(std::memory_order_relaxed);
          sampled[i] += t->sampled[i].load(std::memory_order_relaxed);
          ticks[i] += t->ticks[i].load(std::memory_order_relaxed);
          max_ticks[i] = std::max(max_ticks[i], t->max_ticks[i].load(std::memory_order_relaxed));
          for (int c = 0; c < kSlowClasses; ++c)
            slow_calls[i][c] += t->slow[i][c].load(std::memory_order_relaxed);
        }
        for (int i = 0; i < kCostSites; ++i)
          for (int b = 0; b < kCostBuckets; ++b)
            hist[size_t(i) * kCostBuckets + size_t(b)] +=
                t->hist[i][b].load(std::memory_order_relaxed);
        fn += t->frames_native.load(std::memory_order_relaxed);
        fp += t->frames_python.load(std::memory_order_relaxed);
        copied += t->copy_bytes.load(std::memory_order_relaxed);
      }
    }
  }
  for (int i = int(CostSite::kStack) + 1; i < kCostSites; ++i)
    calls[i] = calls[int(CostSite::kStack)];
  std::vector<CostStat> out;
  for (int i = 0; i < kCostSites; ++i) {
    if (calls[i] == 0) continue;
    if ((CostSite(i) == CostSite::kStackRewalk || CostSite(i) == CostSite::kStackCopy) &&
        sampled[i] == 0)
      continue;  // diagnostics not asked for
    std::string stem = std::string("capture.cost.") + CostSiteName(CostSite(i));
    // Estimated total: the mean of the timed calls times all calls.
    double mean = sampled[i] ? double(ticks[i]) * ns_per_tick / double(sampled[i]) : 0;
    out.push_back({stem + ".calls", calls[i]});
    out.push_back({stem + ".sampled", sampled[i]});
    out.push_back({stem + ".ns", uint64_t(mean * double(calls[i]) + 0.5)});
    const uint64_t* h = &hist[size_t(i) * kCostBuckets];
    uint64_t timed = 0;
    uint64_t over_100us = 0;
    double slow = 0, all = 0;  // ticks, from bucket middles
    for (int b = 0; b < kCostBuckets; ++b) {
      if (!h[b]) continue;
      timed += h[b];
      double mid = BucketMiddle(b) * double(h[b]);
      all += mid;
      if (double(CostBucketStart(b)) * ns_per_tick >= 10000) slow += mid;
      if (BucketMiddle(b) * ns_per_tick >= 100000) over_100us += h[b];
    }
    if (timed == 0) continue;
    out.push_back(
        {stem + ".p50_ns", uint64_t(HistogramQuantile(h, timed, 0.5) * ns_per_tick + 0.5)});
    out.push_back(
        {stem + ".p90_ns", uint64_t(HistogramQuantile(h, timed, 0.9) * ns_per_tick + 0.5)});
    out.push_back(
        {stem + ".p99_ns", uint64_t(HistogramQuantile(h, timed, 0.99) * ns_per_tick + 0.5)});
    out.push_back(
        {stem + ".p999_ns", uint64_t(HistogramQuantile(h, timed, 0.999) * ns_per_tick + 0.5)});
    out.push_back({stem + ".max_ns", uint64_t(double(max_ticks[i]) * ns_per_tick + 0.5)});
    // By buckets (those whose middle is at or past 100 us: within 12%); none when the
    // slowest call, known exactly, was under it.
    if (double(max_ticks[i]) * ns_per_tick < 100000) over_100us = 0;
    out.push_back({stem + ".over_100us", over_100us});
    if (all > 0) out.push_back({stem + ".slow_share_x1000", uint64_t(1000 * slow / all + 0.5)});
    if (SlowCallProbe::On())
      for (int c = 0; c < kSlowClasses; ++c)
        out.push_back({stem + ".slow_" + SlowClassName(SlowClass(c)), slow_calls[i][c]});
  }
  if (uint64_t events = g_first_time_events.load(std::memory_order_relaxed)) {
    out.push_back({"capture.cost.first_time.calls", events});
    out.push_back(
        {"capture.cost.first_time.ns",
         uint64_t(double(g_first_time_ticks.load(std::memory_order_relaxed)) * ns_per_tick + 0.5)});
    out.push_back(
        {"capture.cost.first_time.max_ns",
         uint64_t(double(g_first_time_max_ticks.load(std::memory_order_relaxed)) * ns_per_tick +
                  0.5)});
    if (uint64_t call = g_first_time_call_max_ticks.load(std::memory_order_relaxed))
      out.push_back(
          {"capture.cost.first_time.call_max_ns", uint64_t(double(call) * ns_per_tick + 0.5)});
    auto ns = [&](const std::atomic<uint64_t>& ticks) {
      return uint64_t(double(ticks.load(std::memory_order_relaxed)) * ns_per_tick + 0.5);
    };
    for (int k = 0; k < kFirstTimeKinds; ++k) {
      const uint64_t n = g_first_time_kind_events[k].load(std::memory_order_relaxed);
      if (n == 0) continue;
      const std::string stem = std::string("capture.cost.first_time.") + kFirstTimeKindNames[k];
      out.push_back({stem + ".calls", n});
      out.push_back({stem + ".ns", ns(g_first_time_kind_ticks[k])});
      out.push_back({stem + ".max_ns", ns(g_first_time_kind_max[k])});
      if (uint64_t part = ns(g_first_time_call_max_kind[k]))
        out.push_back({stem + ".in_call_max_ns", part});
    }
  }
  uint64_t stacks = sampled[int(CostSite::kStack)];
  if (stacks) {
    out.push_back({"capture.cost.stack.frames_native_x1000", fn * 1000 / stacks});
    out.push_back({"capture.cost.stack.frames_python_x1000", fp * 1000 / stacks});
  }
  if (uint64_t copies = sampled[int(CostSite::kStackCopy)])
    out.push_back({"capture.cost.stack.copy.bytes_mean", copied / copies});
  out.push_back({"capture.cost.writer.flush_ns", writer.flush_ns});
  out.push_back({"capture.cost.writer.convert_ns", writer.convert_ns});
  out.push_back({"capture.cost.writer.drain_ns", writer.drain_ns});
  out.push_back({"capture.cost.writer.write_ns", writer.write_ns});
  out.push_back({"capture.cost.writer.total_ns", writer.total_ns});
  return out;
}

}  // namespace tracesmith::capture
