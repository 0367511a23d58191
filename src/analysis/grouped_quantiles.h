// Exact per-group statistics (count, total, mean, maximum, nearest-rank p50 and p95) of
// samples that a pass produces, in the memory of a few histograms, not of the samples:
// `pass(emit)` calls emit(group, value) for every sample, the same samples each time it
// runs (a pass over a trace's kernels or calls), `value` a number or a function that
// returns it (called only while the group has a quantile open); groups are numbered from 0
// as the first pass meets them (one result per group up to the largest met). The first pass
// counts, with a coarse histogram per group (16 buckets per power of two: each quantile then
// known within 1/16 of its value); then each quantile not yet known narrows its range of
// candidate values pass by pass, through a histogram over the range, until its candidates
// are few enough to keep and select among, or the range is one value (Limits). Launch and
// kernel durations: at most 3 passes in the test; memory bounded by the limits (32 MB of
// histograms, 32 MB of kept candidates, 8 MB of coarse ones), instead of 4 bytes a sample (400 MB
// at the peak of analyzing 100 M kernels), whatever the number of groups.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/statistics.h"

namespace tracesmith::analysis {

class GroupedQuantiles {
 public:
  // Per pass: buckets per histogram, histograms at once (32 MB), candidates one quantile
  // keeps, and all of them together (tests make them small).
  struct Limits {
    size_t buckets = 4096, histograms = 1024;
    uint64_t keep = 1 << 16, budget = 1 << 22;
  };
  template <typename Pass>
  static std::vector<DurationStats> Compute(const Pass& pass, const Limits& limits = {}) {
    std::vector<DurationStats> out;
    std::vector<std::vector<uint64_t>> coarse;  // per group, the first `histograms` met
    pass([&](uint32_t g, const auto& value) {
      const uint64_t v = ValueOf(value);
      if (g >= out.size()) {
        out.resize(size_t(g) + 1);
        coarse.resize(std::min(out.size(), limits.histograms));
      }
      DurationStats& s = out[g];
      s.count++;
      s.total_ns += v;
      s.max_ns = std::max(s.max_ns, v);
      if (g < coarse.size()) {
        if (coarse[g].empty()) coarse[g].assign(kCoarse, 0);
        coarse[g][CoarseBucket(v)]++;
      }
    });
    std::vector<Target> targets;
    std::vector<std::vector<uint32_t>> of_group(out.size());
    for (uint32_t g = 0; g < out.size(); ++g) {
      DurationStats& s = out[g];
      if (s.count == 0) continue;
      s.mean_ns = s.total_ns / s.count;
      for (double q : {0.5, 0.95}) {
        Target t;
        t.group = g;
        t.rank = NearestRankIndex(s.count, q);
        t.p95 = q > 0.5;
        t.hi = s.max_ns;
        t.in_range = s.count;
        if (g < coarse.size()) {  // the first pass's bucket: within 1/16 of its value
          uint64_t seen = 0;
          size_t b = 0;
          while (seen + coarse[g][b] <= t.rank) seen += coarse[g][b++];
          t.below = seen;
          t.in_range = coarse[g][b];
          t.lo = CoarseLow(b);
          t.hi = std::min(t.hi, CoarseLow(b + 1) - 1);
          if (t.lo == t.hi) Finish(&t, t.lo);
        }
        of_group[g].push_back(uint32_t(targets.size()));
        targets.push_back(std::move(t));
      }
    }
    std::vector<std::vector<uint64_t>>().swap(coarse);
    size_t open = 0;
    for (const Target& t : targets) open += !t.done;
    std::vector<uint8_t> busy(out.size());  // groups with a quantile at work this pass
    while (open > 0) {
      uint64_t budget = limits.budget;
      size_t histograms = limits.histograms;
      std::fill(busy.begin(), busy.end(), 0);
      for (Target& t : targets) {
        t.keeping = t.counting = false;
        if (t.done) continue;
        if (t.in_range <= limits.keep && t.in_range <= budget) {
          t.keeping = true;
          budget -= t.in_range;
          t.kept.reserve(t.in_range);
        } else if (histograms > 0) {  // the first open target always works: progress
          t.counting = true;
          --histograms;
          t.shift = 0;
          while (((t.hi - t.lo) >> t.shift) >= limits.buckets) ++t.shift;
          t.histogram.assign(limits.buckets, 0);
        }
        busy[t.group] |= t.keeping || t.counting;
      }
      pass([&](uint32_t g, const auto& value) {
        if (!busy[g]) return;
        const uint64_t v = ValueOf(value);
        for (uint32_t k : of_group[g]) {
          Target& t = targets[k];
          if (v < t.lo || v > t.hi) continue;
          if (t.keeping)
            t.kept.push_back(v);
          else if (t.counting)
            t.histogram[(v - t.lo) >> t.shift]++;
        }
      });
      for (Target& t : targets) {
        if (!t.keeping && !t.counting) continue;
        const uint64_t want = t.rank - t.below;  // among the candidates, in value order
        if (t.keeping) {
          std::nth_element(t.kept.begin(), t.kept.begin() + want, t.kept.end());
          Finish(&t, t.kept[want]);
        } else {
          uint64_t seen = 0;
          size_t b = 0;
          while (seen + t.histogram[b] <= want) seen += t.histogram[b++];
          t.below += seen;
          t.in_range = t.histogram[b];
          t.lo += uint64_t(b) << t.shift;
          t.hi = std::min(t.hi, t.lo + ((uint64_t(1) << t.shift) - 1));
          std::vector<uint64_t>().swap(t.histogram);
          if (t.lo == t.hi) Finish(&t, t.lo);
        }
        if (t.done) --open;
      }
    }
    for (const Target& t : targets) {
      DurationStats& s = out[t.group];
      (t.p95 ? s.p95_ns : s.p50_ns) = t.value;
    }
    return out;
  }

 private:
  struct Target {
    uint32_t group = 0;
    uint64_t rank = 0;        // the quantile's 0-based index among the group's values
    uint64_t lo = 0, hi = 0;  // its value lies in [lo, hi]
    uint64_t below = 0;       // the group's values under lo
    uint64_t in_range = 0;    // and in [lo, hi]
    uint32_t shift = 0;       // histogram bucket: (value - lo) >> shift
    bool keeping = false, counting = false, done = false, p95 = false;
    uint64_t value = 0;
    std::vector<uint64_t> histogram, kept;
  };
  // The first pass's buckets, per group: 0-15 exact, then 16 per power of two (HDR-like).
  static constexpr size_t kCoarse = 16 + 60 * 16;
  static size_t CoarseBucket(uint64_t v) {
    if (v < 16) return size_t(v);
    const int e = 63 - __builtin_clzll(v);  // 4..63
    return 16 + size_t(e - 4) * 16 + size_t((v >> (e - 4)) & 15);
  }
  // The smallest value of bucket b (b == kCoarse: past the largest, saturated).
  static uint64_t CoarseLow(size_t b) {
    if (b < 16) return b;
    if (b >= kCoarse) return UINT64_MAX;
    const size_t e = 4 + (b - 16) / 16, sub = (b - 16) % 16;
    return uint64_t(16 + sub) << (e - 4);
  }
  template <typename V>
  static uint64_t ValueOf(const V& value) {
    if constexpr (std::is_invocable_v<const V&>)
      return uint64_t(value());
    else
      return uint64_t(value);
  }
  static void Finish(Target* t, uint64_t value) {
    t->value = value;
    t->done = true;
    std::vector<uint64_t>().swap(t->kept);
  }
};

}  // namespace tracesmith::analysis
