#include "tracesmith/job/job_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/statistics.h"

namespace tracesmith::analysis {
namespace {

std::string BoundText(uint64_t ns) {
  return ns == UINT64_MAX ? "clock not aligned" : "clock bound ±" + HumanDuration(ns);
}

// The steady steps: the first (warm-up) is left out when there are 4 or more.
uint64_t MedianStep(const std::vector<RankStep>& steps) {
  std::vector<uint64_t> ns;
  for (size_t i = FirstSteadyStep(steps.size()); i < steps.size(); ++i)
    ns.push_back(steps[i].end_ns - steps[i].begin_ns);
  return Median(ns);
}

// A rank's per-step host time at `site`: listed, or at most its smallest
// listed site's when it lists only the largest (an upper bound, so the
// excess found is never overstated), or 0 when it lists every site.
uint64_t SiteTime(const HostTime& h, const std::string& site) {
  for (const HostSiteTime& x : h.sites)
    if (x.site == site) return x.step_median_ns;
  return h.more_sites && !h.sites.empty() ? h.sites.back().step_median_ns : 0;
}

// "; its step has 12% more host time before launches from `X` ..."
std::string HostExcessText(const HostExcess& e) {
  std::string where =
      e.site.empty() ? "before its launches" : "before launches from `" + e.site + "`";
  std::string text = StrFormat(
      "; its step has %.0f%% more host time %s than the other ranks' median (+%s per %s step: "
      "time outside CUDA API calls, ended by those launches",
      e.share() * 100, where.c_str(), HumanDuration(e.excess_ns).c_str(),
      HumanDuration(e.step_ns).c_str());
  if (!e.stacks)
    text += "; the trace has no call stacks to say where";
  else if (e.site.empty())
    text += "; spread over call sites, none material alone";
  return text + ")";
}

// JobCollective::back_to_back_ns of collective `m`, `before` the one before
// it on its communicator: 0 unless, on every rank taking part, its kernel
// started at or after the end of that one's and at most kBackToBackGapNs
// after it; else the mean over those ranks of the time from the end of
// `before` to its own. Each rank's own clock, so every rank counts, its
// clock aligned or not. Host collectives (gloo, MPI) are never back to
// back: the host runs them one after another.
uint64_t BackToBack(const std::vector<const std::vector<RankCollective>*>& ops,
                    const CollectiveMatch& m, const CollectiveMatch& before) {
  uint64_t sum = 0, ranks = 0;
  for (size_t i = 0; i < m.part.size(); ++i) {
    if (m.part[i] == kNone) continue;
    if (before.part[i] == kNone) return 0;
    const RankCollective& now = (*ops[i])[m.part[i]];
    const RankCollective& prev = (*ops[i])[before.part[i]];
    if (now.source == OpSource::kHostRange || prev.source == OpSource::kHostRange ||
        now.start_ns < prev.end_ns || now.start_ns > prev.end_ns + kBackToBackGapNs ||
        now.end_ns <= prev.end_ns)
      return 0;
    sum += now.end_ns - prev.end_ns;
    ranks++;
  }
  return ranks < 2 ? 0 : sum / ranks;
}

}  // namespace

std::optional<HostExcess> FindHostExcess(const std::vector<RankReport>& ranks, size_t straggler,
                                         uint64_t bound_ns) {
  const RankReport& me = ranks[straggler];
  if (me.host_time.steps < 2 || me.step_median_ns == 0) return std::nullopt;
  std::vector<size_t> others;
  for (size_t j = 0; j < ranks.size(); ++j)
    if (j != straggler && ranks[j].host_time.steps >= 2) others.push_back(j);
  if (others.empty()) return std::nullopt;
  const uint64_t threshold =
      std::max(bound_ns, uint64_t(kHostExcessShare * double(me.step_median_ns)));
  HostExcess best{.stacks = me.host_time.stacks,
                  .step_ns = me.step_median_ns,
                  .others = uint32_t(others.size())};
  // Per call site, against the ranks that have stacks too.
  if (me.host_time.stacks) {
    for (const HostSiteTime& x : me.host_time.sites) {
      std::vector<uint64_t> v;
      for (size_t j : others)
        if (ranks[j].host_time.stacks) v.push_back(SiteTime(ranks[j].host_time, x.site));
      if (v.empty()) break;
      const uint64_t ref = Median(v);
      if (x.step_median_ns > ref && x.step_median_ns - ref > best.excess_ns) {
        best.site = x.site;
        best.rank_ns = x.step_median_ns;
        best.others_ns = ref;
        best.excess_ns = x.step_median_ns - ref;
        best.others = uint32_t(v.size());
      }
    }
    if (best.excess_ns > threshold) return best;
  }
  // The whole step's host time before launches, without a site.
  std::vector<uint64_t> v;
  for (size_t j : others) v.push_back(ranks[j].host_time.step_median_ns);
  const uint64_t ref = Median(v);
  if (me.host_time.step_median_ns <= ref || me.host_time.step_median_ns - ref <= threshold)
    return std::nullopt;
  return HostExcess{.stacks = me.host_time.stacks,
                    .rank_ns = me.host_time.step_median_ns,
                    .others_ns = ref,
                    .excess_ns = me.host_time.step_median_ns - ref,
                    .step_ns = me.step_median_ns,
                    .others = uint32_t(others.size())};
}

double BusBandwidthFactor(CollectiveOp op, uint32_t ranks) {
  const double n = ranks;
  if (ranks == 0) return 0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
      return 1;
    default:
      return 0;
  }
}

void SortRanks(std::vector<RankSummary>* summaries) {
  std::stable_sort(summaries->begin(), summaries->end(),
                   [](const RankSummary& a, const RankSummary& b) {
                     const auto key = [](const RankSummary& s) {
                       return std::tuple(s.rank < 0, s.rank < 0 ? 0 : s.rank, s.source, s.pid);
                     };
                     return key(a) < key(b);
                   });
}

JobAlignment AlignJob(const std::vector<RankSummary>& summaries, const ClockOptions& options) {
  const size_t n = summaries.size();
  std::vector<const std::vector<RankCollective>*> ops(n);
  std::vector<std::string> labels(n);
  std::vector<ProcessClockInput> clock_in(n);
  for (size_t i = 0; i < n; ++i) {
    ops[i] = &summaries[i].collectives.ops;
    labels[i] = summaries[i].Label();
    clock_in[i] = summaries[i].ClockInput();
  }
  JobAlignment al;
  al.match = MatchCollectives(ops, labels);
  al.times.reserve(al.match.matches.size());
  for (const CollectiveMatch& m : al.match.matches) {
    CollectiveTimes t;
    t.start.assign(n, 0);
    t.end.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (m.part[i] == kNone) continue;
      const RankCollective& rc = (*ops[i])[m.part[i]];
      if (t.op == CollectiveOp::kUnknown) t.op = rc.op;
      t.start[i] = rc.start_ns;
      t.end[i] = rc.end_ns;
    }
    al.times.push_back(std::move(t));
  }
  al.clock = JobClock::Build(clock_in, al.times, options);
  return al;
}

std::vector<std::string> LeaveOutLaunchers(std::vector<RankSummary>* summaries) {
  std::vector<std::string> left_out;
  const bool has_ranks = std::any_of(summaries->begin(), summaries->end(),
                                     [](const RankSummary& s) { return s.rank >= 0; });
  if (!has_ranks) return left_out;
  std::erase_if(*summaries, [&](const RankSummary& s) {
    const bool idle = s.rank < 0 && s.kernels == 0 && s.collectives.ops.empty();
    if (idle) left_out.push_back(s.Label() + ": no rank, no GPU work (a launcher?)");
    return idle;
  });
  return left_out;
}

uint64_t StepLateness(const std::vector<RankStep>& steps, std::vector<LateArrival> late,
                      uint32_t* used_steps) {
  *used_steps = 0;
  const size_t first = FirstSteadyStep(steps.size());
  if (steps.size() < first + 2) return 0;
  std::sort(late.begin(), late.end(),
            [](const LateArrival& a, const LateArrival& b) { return a.arrival_ns < b.arrival_ns; });
  std::vector<uint64_t> per_step;
  auto next = late.begin();
  for (size_t i = first; i < steps.size(); ++i) {
    const uint64_t begin = steps[i].begin_ns;
    const uint64_t end =
        i + 1 < steps.size() ? steps[i + 1].begin_ns : begin + (begin - steps[i - 1].begin_ns);
    while (next != late.end() && next->arrival_ns < begin) ++next;
    uint64_t sum = 0;
    for (; next != late.end() && next->arrival_ns < end; ++next) sum += next->lateness_ns;
    per_step.push_back(sum);
  }
  *used_steps = uint32_t(per_step.size());
  return Median(per_step);
}

JobReport BuildJobReport(std::vector<RankSummary> summaries, const JobOptions& options) {
  JobReport r;
  r.clock_options = options.clock;
  r.left_out = LeaveOutLaunchers(&summaries);
  SortRanks(&summaries);
  const size_t n = summaries.size();
  for (size_t i = 1; i < n; ++i)
    if (summaries[i].rank >= 0 && summaries[i].rank == summaries[i - 1].rank)
      r.warnings.push_back(StrFormat("rank %d appears twice (%s and %s): both are kept",
                                     summaries[i].rank, summaries[i - 1].Label().c_str(),
                                     summaries[i].Label().c_str()));
  const JobAlignment al = AlignJob(summaries, options.clock);
  const MatchResult& match = al.match;
  const std::vector<CollectiveTimes>& times = al.times;
  const JobClock& clock = al.clock;
  std::vector<const std::vector<RankCollective>*> ops(n);
  for (size_t i = 0; i < n; ++i) ops[i] = &summaries[i].collectives.ops;
  r.comms = match.comms;
  r.matched_per_comm = match.matched_per_comm;
  r.comm_ids = match.comm_ids;
  for (const std::string& w : match.warnings) r.warnings.push_back(w);
  r.hosts = clock.hosts();
  r.max_bound_ns = clock.MaxBound();
  for (const std::string& w : clock.warnings()) r.warnings.push_back(w);

  r.ranks.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const RankSummary& s = summaries[i];
    RankReport& rr = r.ranks[i];
    rr.rank = s.rank;
    rr.pid = s.pid;
    rr.host_time = s.host_time;
    rr.source = s.source;
    rr.label = s.Label();
    rr.clock = clock.process(i);
    rr.wall_ns = s.last_ns > s.first_ns ? s.last_ns - s.first_ns : 0;
    rr.gpu_busy_ns = s.gpu_busy_ns;
    rr.compute_ns = s.compute_ns;
    rr.comm_ns = s.comm_ns;
    rr.overlap_ns = s.overlap_ns;
    rr.collectives = uint32_t(s.collectives.ops.size());
    rr.with_payload = uint32_t(s.collectives.with_payload);
    rr.steps = uint32_t(s.steps.size());
    rr.step_median_ns = MedianStep(s.steps);
    rr.host_time = s.host_time;
    for (const std::string& w : s.warnings) rr.warnings.push_back(w);
    if (!rr.clock.aligned() && n > 1)
      r.warnings.push_back(rr.label +
                           ": no clock anchors; its collectives are left out of "
                           "arrival and waiting times");
  }

  // Per collective: arrivals on the job clock (aligned members only).
  std::vector<std::vector<uint64_t>> lateness_bound_of(n);
  std::vector<std::vector<LateArrival>> late_of(n);  // on each rank's own clock
  std::vector<uint64_t> arrival(n), end(n);
  std::vector<uint32_t> compared(n, 0);  // collectives whose arrivals it was compared in
  // Per communicator, the collective before (BackToBack): matches run by
  // communicator, each one's from seq 0 without a gap (MatchCollectives).
  std::vector<const CollectiveMatch*> prev_match(match.comms, nullptr);
  for (size_t k = 0; k < match.matches.size(); ++k) {
    const CollectiveMatch& m = match.matches[k];
    const CollectiveMatch* before = std::exchange(prev_match[m.comm], &m);
    JobCollective jc{.comm = m.comm, .seq = m.seq, .op = times[k].op};
    std::vector<size_t> members;
    for (size_t i = 0; i < n; ++i) {
      if (m.part[i] == kNone) continue;
      r.ranks[i].matched++;
      if (!clock.process(i).aligned()) continue;
      const RankCollective& rc = (*ops[i])[m.part[i]];
      if (jc.kind.empty()) jc.kind = summaries[i].collectives.kinds.at(rc.kind);
      jc.bytes = std::max(jc.bytes, rc.bytes);
      jc.group_size = std::max(jc.group_size, rc.group_size);
      if (!jc.nccl_comm) jc.nccl_comm = rc.comm_hash;
      arrival[i] = clock.process(i).ToJob(rc.start_ns);
      end[i] = std::max(arrival[i], clock.process(i).ToJob(rc.end_ns));
      members.push_back(i);
    }
    if (members.size() < 2) continue;
    jc.ranks = uint32_t(members.size());
    jc.first_arrival_ns = UINT64_MAX;
    size_t last = members[0];
    for (size_t i : members) {
      jc.first_arrival_ns = std::min(jc.first_arrival_ns, arrival[i]);
      if (arrival[i] > arrival[last]) last = i;
      jc.end_ns = std::max(jc.end_ns, end[i]);
    }
    jc.start_ns = arrival[last];
    if (before) jc.back_to_back_ns = BackToBack(ops, m, *before);
    jc.last_rank = uint32_t(last);
    jc.skew_ns = jc.start_ns - jc.first_arrival_ns;
    std::vector<uint64_t> others;
    for (size_t i : members) {
      if (i != last) others.push_back(arrival[i]);
      jc.bound_ns = std::max(jc.bound_ns, i == last ? 0 : clock.PairBound(last, i));
      r.ranks[i].wait_ns += std::min(jc.start_ns, end[i]) - arrival[i];
      compared[i]++;
    }
    jc.lateness_ns = jc.start_ns - Median(others);
    // A last rank is named only when its lateness exceeds the clock bound:
    // below it, the clock could have made anyone last.
    jc.last_significant = jc.lateness_ns > jc.bound_ns;
    if (jc.last_significant) {
      r.ranks[last].last_arrivals++;
      late_of[last].push_back({(*ops[last])[m.part[last]].start_ns, jc.lateness_ns});
      lateness_bound_of[last].push_back(jc.bound_ns);
    } else {
      r.collectives_within_bound++;
    }
    r.collectives.push_back(std::move(jc));
  }
  for (size_t i = 0; i < n; ++i) {
    RankReport& rr = r.ranks[i];
    std::vector<uint64_t> lateness;
    for (const LateArrival& a : late_of[i]) lateness.push_back(a.lateness_ns);
    rr.median_lateness_ns = Median(lateness);
    rr.step_lateness_ns =
        StepLateness(summaries[i].steps, std::move(late_of[i]), &rr.lateness_steps);
  }

  // Stragglers: ranks arriving last more often than a fair share (1/ranks).
  for (size_t i = 0; i < n; ++i) {
    if (r.ranks[i].last_arrivals == 0) continue;
    r.stragglers.push_back({.rank_index = uint32_t(i),
                            .last_count = r.ranks[i].last_arrivals,
                            .of = compared[i],
                            .median_late_ns = r.ranks[i].median_lateness_ns,
                            .step_late_ns = r.ranks[i].step_lateness_ns,
                            .steps = r.ranks[i].lateness_steps,
                            .bound_ns = Median(lateness_bound_of[i])});
  }
  std::stable_sort(
      r.stragglers.begin(), r.stragglers.end(),
      [](const Straggler& a, const Straggler& b) { return a.last_count > b.last_count; });
  for (Straggler& s : r.stragglers)
    if (s.significant()) s.host_excess = FindHostExcess(r.ranks, s.rank_index, s.bound_ns);

  // Bandwidth by (operation, bytes, ranks), where bytes are known.
  struct SizeTimes {
    std::vector<uint64_t> durations;
    uint64_t back_to_back_sum = 0;
    uint32_t back_to_back = 0;
  };
  std::map<std::tuple<uint8_t, uint64_t, uint32_t>, SizeTimes> by_size;
  for (const JobCollective& c : r.collectives) {
    if (c.bytes == 0 || c.end_ns <= c.start_ns) continue;
    // The group's size when NCCL's payload gave it (a subgroup, or ranks not all traced).
    SizeTimes& t = by_size[{uint8_t(c.op), c.bytes, c.group_size ? c.group_size : c.ranks}];
    t.durations.push_back(c.end_ns - c.start_ns);
    if (c.back_to_back_ns) {
      t.back_to_back_sum += c.back_to_back_ns;
      t.back_to_back++;
    }
  }
  for (const auto& [key, t] : by_size) {
    BandwidthRow b{.op = CollectiveOp(std::get<0>(key)),
                   .bytes = std::get<1>(key),
                   .ranks = std::get<2>(key),
                   .count = uint32_t(t.durations.size()),
                   .median_ns = Median(t.durations)};
    const double factor = BusBandwidthFactor(b.op, b.ranks);
    b.algbw_gbps = double(b.bytes) / double(b.median_ns);  // bytes/ns = GB/s
    b.busbw_gbps = b.algbw_gbps * factor;
    if (t.back_to_back) {  // nccl-tests: the mean over its loop
      b.back_to_back = t.back_to_back;
      b.back_to_back_mean_ns = t.back_to_back_sum / t.back_to_back;
      b.back_to_back_busbw_gbps = double(b.bytes) / double(b.back_to_back_mean_ns) * factor;
    }
    r.bandwidth.push_back(b);
  }

  // Step times across ranks (each rank's own clock: durations need no alignment).
  std::vector<std::pair<uint64_t, uint32_t>> medians;
  for (size_t i = 0; i < n; ++i)
    if (r.ranks[i].steps >= 2) medians.push_back({r.ranks[i].step_median_ns, uint32_t(i)});
  if (!medians.empty()) {
    std::sort(medians.begin(), medians.end());
    StepVariance& v = r.steps;
    v.ranks_with_steps = uint32_t(medians.size());
    v.min_median_ns = medians.front().first;
    v.max_median_ns = medians.back().first;
    v.median_median_ns = medians[(medians.size() - 1) / 2].first;
    v.slowest_rank_index = medians.back().second;
    double sum = 0, sq = 0;
    for (const auto& [ns, i] : medians) sum += double(ns);
    const double mean = sum / double(medians.size());
    for (const auto& [ns, i] : medians) sq += (double(ns) - mean) * (double(ns) - mean);
    v.cv = mean > 0 ? std::sqrt(sq / double(medians.size())) / mean : 0;
  }

  // ---- findings, most useful first ----
  auto& f = r.findings;
  // A rank is a straggler when it is last more often than twice its share
  // of the collectives that have a last rank beyond the clock bound (the
  // others start together: nobody is last at them), or with few ranks,
  // where twice the share is all or more, more than halfway from its share
  // to all of them (2 ranks: at more than 3 in 4).
  size_t with_last = 0;
  for (const JobCollective& c : r.collectives) with_last += c.last_significant;
  const size_t fair = with_last / std::max<size_t>(n, 1);
  const size_t often = std::min(2 * fair, (fair + with_last) / 2);
  for (const Straggler& s : r.stragglers) {
    if (f.size() >= 3) break;
    if (s.last_count < 3 || s.last_count <= often) continue;
    const RankReport& rr = r.ranks[s.rank_index];
    std::string text =
        StrFormat("%s arrives last at %u of %u collectives, median %s late", rr.label.c_str(),
                  s.last_count, s.of, HumanDuration(s.median_late_ns).c_str());
    if (s.steps)
      text += StrFormat("; %s late per step (median of %u steps)",
                        HumanDuration(s.step_late_ns).c_str(), s.steps);
    text += " (" + BoundText(s.bound_ns) + ")";
    if (!s.significant())
      text += ": smaller than the clock bound, so not distinguishable from clock error";
    if (s.host_excess) text += HostExcessText(*s.host_excess);
    f.push_back(text);
  }
  if (r.steps.ranks_with_steps >= 2 && r.steps.median_median_ns > 0) {
    const double over = double(r.steps.max_median_ns) / double(r.steps.median_median_ns) - 1;
    if (over >= 0.05)
      f.push_back(
          StrFormat("%s has the slowest steps: median %s, %.0f%% above the median rank's %s",
                    r.ranks[r.steps.slowest_rank_index].label.c_str(),
                    HumanDuration(r.steps.max_median_ns).c_str(), over * 100,
                    HumanDuration(r.steps.median_median_ns).c_str()));
  }
  // The rank that waits the most for its peers.
  size_t most_wait = n;
  for (size_t i = 0; i < n; ++i)
    if (r.ranks[i].wait_ns > 0 &&
        (most_wait == n || r.ranks[i].wait_ns > r.ranks[most_wait].wait_ns))
      most_wait = i;
  if (most_wait < n && r.ranks[most_wait].comm_ns > 0) {
    const RankReport& rr = r.ranks[most_wait];
    const uint64_t bound = rr.clock.bound_ns;
    std::string text = StrFormat(
        "%s spends %s in collectives waiting for peers (%.0f%% of its communication time)",
        rr.label.c_str(), HumanDuration(rr.wait_ns).c_str(),
        100.0 * double(rr.wait_ns) / double(rr.comm_ns));
    if (rr.matched > 0 && rr.wait_ns / rr.matched <= 2 * bound)
      text +=
          StrFormat(" — %s per collective, within the clock bound (±%s): not significant",
                    HumanDuration(rr.wait_ns / rr.matched).c_str(), HumanDuration(bound).c_str());
    f.push_back(text);
  }
  for (const RankReport& rr : r.ranks) {
    if (f.size() >= options.max_findings) break;
    if (rr.comm_ns > 0 && rr.overlap_ns * 10 < rr.comm_ns && rr.compute_ns > 0 &&
        rr.comm_ns * 10 > rr.gpu_busy_ns) {
      f.push_back(
          StrFormat("%s: communication overlaps compute for %.0f%% of its %s "
                    "(communication runs mostly exposed)",
                    rr.label.c_str(), 100.0 * double(rr.overlap_ns) / double(rr.comm_ns),
                    HumanDuration(rr.comm_ns).c_str()));
      break;  // one example; the table has every rank
    }
  }
  if (f.size() > options.max_findings) f.resize(options.max_findings);
  return r;
}

StatusOr<JobReport> AnalyzeJob(std::span<const std::string> files, const JobOptions& options) {
  std::vector<RankSummary> summaries;
  std::vector<std::string> skipped;
  for (const std::string& path : files) {
    auto s = SummarizeFile(path);  // one file's working set at a time
    if (!s.ok()) {
      skipped.push_back(s.status().message() + " (left out)");
      continue;
    }
    for (RankSummary& x : *s) summaries.push_back(std::move(x));
  }
  if (summaries.empty()) {
    std::string why;
    for (const std::string& s : skipped) why += "\n  " + s;
    return InvalidArgument("no rank could be read:" + why);
  }
  JobReport r = BuildJobReport(std::move(summaries), options);
  r.warnings.insert(r.warnings.begin(), skipped.begin(), skipped.end());
  return r;
}

std::optional<JobReport> JobReportOf(const CompactTrace& trace, std::span<const std::string> files,
                                     const JobOptions& options, std::string* why) {
  std::set<uint32_t> pids;
  for (const model::Process& p : trace.meta().Rows<model::Process>()) pids.insert(p.pid);
  if (pids.size() < 2) return std::nullopt;
  auto job = AnalyzeJob(files, options);
  if (!job.ok()) {
    if (why) *why = job.status().ToString();
    return std::nullopt;
  }
  if (job->ranks.size() < 2) return std::nullopt;
  return std::move(job).value();
}

}  // namespace tracesmith::analysis
