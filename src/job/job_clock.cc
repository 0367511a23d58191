#include "tracesmith/job/job_clock.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "tracesmith/base/statistics.h"
#include "tracesmith/base/status.h"

namespace tracesmith::analysis {
namespace {

constexpr int64_t kInf = INT64_MAX / 4;  // "no constraint"; sums of two stay representable

// A process's capture clock -> its host's CLOCK_MONOTONIC, and what that costs.
struct LocalClock {
  bool ok = false;
  ClockMap to_mono;             // capture -> monotonic
  int64_t real_minus_mono = 0;  // this process's view of its host's realtime - monotonic
  uint64_t anchor_bound = 0;
  uint64_t max_window = 0;
  double drift_ppm = 0;
  bool default_window = false;
  uint32_t anchors = 0;
};

LocalClock LocalOf(const ProcessClockInput& p, const ClockOptions& o) {
  LocalClock lc;
  std::vector<model::ClockAnchor> a;
  for (const model::ClockAnchor& x : p.anchors)
    if (x.gpu_ns != 0 && (x.monotonic_ns != 0 || x.realtime_ns != 0)) a.push_back(x);
  if (a.empty()) return lc;
  std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.gpu_ns < y.gpu_ns; });
  lc.ok = true;
  lc.anchors = uint32_t(a.size());
  // An anchor without a monotonic reading (a writer that had none) uses its
  // realtime reading as the host clock: realtime - monotonic is then 0.
  auto mono = [](const model::ClockAnchor& x) {
    return int64_t(x.monotonic_ns ? x.monotonic_ns : x.realtime_ns);
  };
  const model::ClockAnchor &a0 = a.front(), &a1 = a.back();
  lc.to_mono = ClockMap{.g0 = int64_t(a0.gpu_ns),
                        .r0 = mono(a0),
                        .g1 = int64_t(a1.gpu_ns),
                        .r1 = mono(a1),
                        .linear = a1.gpu_ns != a0.gpu_ns};
  std::vector<int64_t> rm;
  for (const model::ClockAnchor& x : a) {
    uint64_t w = x.read_window_ns;
    if (w == 0) {
      w = o.default_read_window_ns;
      lc.default_window = true;
    }
    lc.max_window = std::max(lc.max_window, w);
    if (x.realtime_ns != 0) rm.push_back(int64_t(x.realtime_ns) - mono(x));
  }
  lc.real_minus_mono = Median(rm);
  const double w0 = double(a0.read_window_ns ? a0.read_window_ns : o.default_read_window_ns);
  const double w1 = double(a1.read_window_ns ? a1.read_window_ns : o.default_read_window_ns);
  // Between the anchors the error is at most the larger half-window; outside
  // them it grows with the slope's own error (both ends' errors over the
  // anchors' distance), or with the assumed drift when there is one anchor.
  double bound = double(lc.max_window) / 2;
  const double g0 = double(a0.gpu_ns), g1 = double(a1.gpu_ns);
  const double first = double(p.first_ns ? p.first_ns : a0.gpu_ns);
  const double last = double(p.last_ns ? p.last_ns : a1.gpu_ns);
  if (lc.to_mono.linear) {
    const double outside = std::max({0.0, g0 - first, last - g1});
    bound += outside * (w0 / 2 + w1 / 2) / (g1 - g0);
    lc.drift_ppm = ((g1 - g0) / double(mono(a1) - mono(a0)) - 1) * 1e6;
  } else {
    const double span = std::max(std::abs(first - g0), std::abs(last - g0));
    bound += span * o.max_drift_ppm * 1e-6;
  }
  lc.anchor_bound = uint64_t(std::ceil(bound));
  return lc;
}

}  // namespace

const char* ClockMethodName(ClockMethod m) {
  switch (m) {
    case ClockMethod::kNoAnchors:
      return "no anchors: own clock, not aligned";
    case ClockMethod::kSameHost:
      return "same host: monotonic anchors";
    case ClockMethod::kRealtime:
      return "realtime anchors";
    case ClockMethod::kRealtimeRefined:
      return "realtime + collectives";
  }
  return "?";
}

JobClock JobClock::Build(std::span<const ProcessClockInput> procs,
                         std::span<const CollectiveTimes> collectives,
                         const ClockOptions& options) {
  JobClock out;
  out.options_ = options;
  const size_t n = procs.size();
  std::vector<LocalClock> local(n);
  out.procs_.resize(n);
  // Hosts, in order of first appearance: the first aligned process's host is
  // the reference. A process without a host name is a host of its own (it
  // cannot be assumed to share a clock with anyone).
  std::map<std::string, uint32_t> host_index;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < n; ++i) {
    local[i] = LocalOf(procs[i], options);
    ProcessClock& pc = out.procs_[i];
    pc.anchors = local[i].anchors;
    pc.default_window = local[i].default_window;
    if (!local[i].ok) {
      pc.host = UINT32_MAX;
      continue;
    }
    const std::string key = procs[i].host.empty() ? "\x01" + std::to_string(i) : procs[i].host;
    auto [it, inserted] = host_index.try_emplace(key, uint32_t(out.hosts_.size()));
    if (inserted) {
      out.hosts_.push_back({.name = procs[i].host.empty() ? "(unknown host)" : procs[i].host});
      members.emplace_back();
    }
    pc.host = it->second;
    members[it->second].push_back(i);
  }
  const size_t h = out.hosts_.size();
  if (h == 0) return out;

  // Each host's realtime - monotonic (its processes agree unless realtime
  // was stepped during the capture), and the prior interval of its offset
  // against the reference host.
  std::vector<int64_t> rm(h);
  std::vector<uint64_t> window(h, 0);
  for (size_t k = 0; k < h; ++k) {
    std::vector<int64_t> v;
    for (size_t i : members[k]) {
      v.push_back(local[i].real_minus_mono);
      window[k] = std::max(window[k], local[i].max_window);
    }
    rm[k] = Median(v);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    if (uint64_t(*hi - *lo) > 2 * window[k] + 1000)
      out.warnings_.push_back(StrFormat(
          "host %s: its processes disagree by %lld ns on CLOCK_REALTIME - CLOCK_MONOTONIC "
          "(realtime stepped during the capture?); the median is used",
          out.hosts_[k].name.c_str(), static_cast<long long>(*hi - *lo)));
  }
  // y[k] = x_k - x_0; prior y[k] in rm[k] - rm[0] +- (NTP bound + read windows).
  std::vector<int64_t> prior(h), prior_half(h);
  for (size_t k = 0; k < h; ++k) {
    prior[k] = rm[k] - rm[0];
    prior_half[k] = k == 0 ? 0 : int64_t(options.ntp_bound_ns + window[k] + window[0]);
  }
  // Difference constraints y_b - y_a <= d[a][b], solved by Floyd-Warshall
  // (hosts are few: 64 hosts are 262k steps).
  std::vector<std::vector<int64_t>> d(h, std::vector<int64_t>(h, kInf));
  for (size_t k = 0; k < h; ++k) {
    d[k][k] = 0;
    if (k == 0) continue;
    d[0][k] = prior[k] + prior_half[k];
    d[k][0] = -(prior[k] - prior_half[k]);
  }
  // Local time: monotonic + the reference host's realtime - monotonic.
  auto local_time = [&](size_t i, uint64_t t) { return int64_t(local[i].to_mono(t)) + rm[0]; };
  uint64_t same_host_violations = 0;
  if (options.refine_with_collectives) {
    std::vector<int64_t> min_end(h), max_start(h);
    for (const CollectiveTimes& c : collectives) {
      if (!NeedsEveryRank(c.op)) continue;
      std::fill(min_end.begin(), min_end.end(), kInf);
      std::fill(max_start.begin(), max_start.end(), -kInf);
      for (size_t i = 0; i < n && i < c.start.size(); ++i) {
        if (c.start[i] == 0 || !local[i].ok) continue;
        const uint32_t k = out.procs_[i].host;
        const int64_t ab = int64_t(local[i].anchor_bound);
        min_end[k] = std::min(min_end[k], local_time(i, c.end[i]) + ab);
        max_start[k] = std::max(max_start[k], local_time(i, c.start[i]) - ab);
      }
      for (size_t a = 0; a < h; ++a) {
        if (min_end[a] == kInf) continue;
        if (max_start[a] != -kInf && min_end[a] < max_start[a]) same_host_violations++;
        for (size_t b = 0; b < h; ++b) {
          if (a == b || max_start[b] == -kInf) continue;
          d[a][b] = std::min(d[a][b], min_end[a] - max_start[b]);
          out.hosts_[a].constraints++;
          out.hosts_[b].constraints++;
        }
      }
    }
  }
  if (same_host_violations > 0)
    out.warnings_.push_back(StrFormat(
        "%llu collectives have a rank ending before another rank of the same host started "
        "them, beyond the anchors' bound: the collective matching (or the anchors) is wrong",
        static_cast<unsigned long long>(same_host_violations)));
  std::vector<std::vector<int64_t>> dist = d;
  for (size_t m = 0; m < h; ++m)
    for (size_t a = 0; a < h; ++a) {
      if (dist[a][m] == kInf) continue;
      for (size_t b = 0; b < h; ++b)
        if (dist[m][b] != kInf) dist[a][b] = std::min(dist[a][b], dist[a][m] + dist[m][b]);
    }
  bool consistent = true;
  for (size_t k = 0; k < h; ++k) consistent &= dist[k][k] >= 0;
  if (!consistent) {
    out.warnings_.push_back(StrFormat(
        "the collectives contradict the assumed NTP bound of %.3f ms (no host offsets satisfy "
        "both): the bound is too small or the collectives are mismatched; offsets come from the "
        "realtime anchors alone",
        double(options.ntp_bound_ns) / 1e6));
    dist.assign(h, std::vector<int64_t>(h, kInf));
    for (size_t k = 1; k < h; ++k) {
      dist[0][k] = prior[k] + prior_half[k];
      dist[k][0] = -(prior[k] - prior_half[k]);
    }
  }
  std::vector<int64_t> y(h, 0);
  for (size_t k = 1; k < h; ++k) {
    const int64_t hi = dist[0][k], lo = -dist[k][0];
    y[k] = lo + (hi - lo) / 2;
    HostClock& hc = out.hosts_[k];
    hc.offset_ns = y[k];
    hc.half_width_ns = uint64_t((hi - lo + 1) / 2);
    hc.prior_half_width_ns = uint64_t(prior_half[k]);
  }
  for (size_t i = 0; i < n; ++i) {
    ProcessClock& pc = out.procs_[i];
    if (!local[i].ok) continue;
    const HostClock& hc = out.hosts_[pc.host];
    const int64_t shift = rm[0] + y[pc.host];
    pc.map = local[i].to_mono;
    pc.map.r0 += shift;
    pc.map.r1 += shift;
    pc.method = pc.host == 0                                ? ClockMethod::kSameHost
                : hc.half_width_ns < hc.prior_half_width_ns ? ClockMethod::kRealtimeRefined
                                                            : ClockMethod::kRealtime;
    pc.offset_ns = pc.map.r0 - pc.map.g0;
    pc.drift_ppm = local[i].drift_ppm;
    pc.anchor_bound_ns = local[i].anchor_bound;
    pc.bound_ns = local[i].anchor_bound + hc.half_width_ns;
  }
  return out;
}

uint64_t PairBound(const ProcessClock& a, const ProcessClock& b) {
  if (!a.aligned() || !b.aligned()) return UINT64_MAX;
  if (a.host == b.host) return a.anchor_bound_ns + b.anchor_bound_ns;
  return a.bound_ns + b.bound_ns;
}

uint64_t JobClock::MaxBound() const {
  uint64_t m = 0;
  for (const ProcessClock& p : procs_)
    if (p.aligned()) m = std::max(m, p.bound_ns);
  return m;
}

}  // namespace tracesmith::analysis
