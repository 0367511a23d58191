#include "tracesmith/job/rank_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <unordered_map>

#include "tracesmith/analysis/report.h"
#include "tracesmith/analysis/steps.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/process_rank.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/timeline.h"

namespace tracesmith::analysis {
namespace {

// The host collectives of `c` (gloo, MPI: the rank waits for its peers on
// the host, outside any CUDA call) by thread id, each thread's in time order.
std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> HostCollectiveSpans(
    const ProcessCollectives& c) {
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> out;
  for (const RankCollective& op : c.ops)
    if (op.comm < c.comms.size() && c.comms[op.comm].device == kHostComm)
      out[c.comms[op.comm].stream].emplace_back(op.start_ns, op.end_ns);
  for (auto& [tid, spans] : out) {  // sorted, overlapping spans merged (CoveredBy needs both)
    std::sort(spans.begin(), spans.end());
    size_t n = 0;
    for (const auto& sp : spans) {
      if (n && sp.first <= spans[n - 1].second)
        spans[n - 1].second = std::max(spans[n - 1].second, sp.second);
      else
        spans[n++] = sp;
    }
    spans.resize(n);
  }
  return out;
}

// The part of [a, b) covered by `spans` (sorted, not overlapping each other).
uint64_t CoveredBy(const std::vector<std::pair<uint64_t, uint64_t>>& spans, uint64_t a,
                   uint64_t b) {
  uint64_t n = 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), a,
                             [](uint64_t t, const auto& s) { return t < s.second; });
  for (; it != spans.end() && it->first < b; ++it)
    n += std::min(b, it->second) - std::max(a, it->first);
  return n;
}

// HostTime of process `pid` over `steps` (rank_summary.h says what is counted).
HostTime MeasureHostTime(const CompactTrace& trace, uint32_t pid,
                         const std::vector<RankStep>& all_steps,
                         const ProcessCollectives& collectives) {
  HostTime h;
  const size_t first = FirstSteadyStep(all_steps.size());
  if (all_steps.size() < first + 2) return h;
  const auto waiting = HostCollectiveSpans(collectives);
  const std::span<const RankStep> steps(all_steps.begin() + ptrdiff_t(first), all_steps.end());
  const auto calls = trace.calls();
  // Calls that launched GPU work.
  std::vector<uint8_t> launches(calls.size(), 0);
  for (uint32_t i = 0; i < trace.ops().size(); ++i) {
    const uint32_t c = trace.CallOfOp(i);
    if (c != kNone && trace.PidOfLane(calls[c].lane) == pid) launches[c] = 1;
  }
  for (const HostCall& c : calls) h.stacks |= c.stack_id != 0 && trace.PidOfLane(c.lane) == pid;
  CallSiteNamer namer(trace.meta());
  std::unordered_map<uint32_t, uint32_t> site_of_stack;
  std::map<std::string, uint32_t> site_index;
  std::vector<std::string> sites;
  // (site, step) -> ns, non-zero cells only: at most sites x steps, far
  // fewer than launches (consecutive launches mostly share a site).
  std::unordered_map<uint64_t, uint64_t> cells;
  std::vector<uint64_t> total(steps.size(), 0);
  uint32_t last_stack = UINT32_MAX, site = 0;  // the site of the last stack named
  for (uint32_t lane = 0; lane < trace.lanes().size(); ++lane) {
    if (!trace.lanes()[lane].host || trace.PidOfLane(lane) != pid) continue;
    const auto w = waiting.find(trace.lanes()[lane].tid);
    const LaneRange r = trace.lane_range(lane);
    uint64_t prev_end = 0;
    bool any = false;
    // Gaps since the thread's last launch, by step (each step once, in
    // order): they go to the next launch's site, or nowhere if none comes.
    std::vector<std::pair<size_t, uint64_t>> pending;
    for (uint32_t ci = r.begin; ci < r.end; ++ci) {
      const HostCall& c = calls[ci];
      // Nested calls (a driver call inside a runtime call) overlap: the gap
      // is from the latest end seen.
      const uint64_t from = prev_end;
      const bool had = any;
      prev_end = any ? std::max(prev_end, c.end_ns) : c.end_ns;
      any = true;
      if (had && c.start_ns > from) {
        // The gap [from, call) counts in the steps it overlaps, each its
        // part (a sleep at the end of step k, ended by step k+1's first
        // launch, is step k's), less the waiting in the thread's host
        // collectives.
        auto it = std::upper_bound(steps.begin(), steps.end(), from,
                                   [](uint64_t t, const RankStep& s) { return t < s.end_ns; });
        for (; it != steps.end() && it->begin_ns < c.start_ns; ++it) {
          const uint64_t a = std::max(from, it->begin_ns), b = std::min(c.start_ns, it->end_ns);
          if (a >= b) continue;
          uint64_t ns = b - a;
          if (w != waiting.end()) ns -= std::min(ns, CoveredBy(w->second, a, b));
          if (ns == 0) continue;
          const size_t k = size_t(it - steps.begin());
          if (!pending.empty() && pending.back().first == k)
            pending.back().second += ns;
          else
            pending.emplace_back(k, ns);
        }
      }
      if (!launches[ci] || pending.empty()) continue;
      if (h.stacks && c.stack_id != last_stack) {
        last_stack = c.stack_id;
        auto si = site_of_stack.find(c.stack_id);
        if (si == site_of_stack.end()) {
          const std::string text = namer.Name(c.stack_id);
          auto [ti, added] = site_index.try_emplace(text, uint32_t(sites.size()));
          if (added) sites.push_back(text);
          si = site_of_stack.emplace(c.stack_id, ti->second).first;
        }
        site = si->second;
      }
      for (const auto& [k, ns] : pending) {
        total[k] += ns;
        cells[uint64_t(site) << 32 | k] += ns;
      }
      pending.clear();
    }
  }
  h.steps = uint32_t(steps.size());
  h.step_median_ns = Median(total);
  if (!h.stacks) return h;
  std::vector<std::vector<uint64_t>> per_site(sites.size());
  for (const auto& [key, ns] : cells) {
    std::vector<uint64_t>& v = per_site[key >> 32];
    if (v.empty()) v.assign(steps.size(), 0);
    v[key & 0xffffffff] = ns;
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    const uint64_t m = Median(std::move(per_site[i]));
    if (m > 0) h.sites.push_back({sites[i], m});
  }
  std::sort(h.sites.begin(), h.sites.end(), [](const HostSiteTime& a, const HostSiteTime& b) {
    return a.step_median_ns != b.step_median_ns ? a.step_median_ns > b.step_median_ns
                                                : a.site < b.site;
  });
  if (h.sites.size() > kHostSites) {
    h.sites.resize(kHostSites);
    h.more_sites = true;
  }
  return h;
}

}  // namespace

std::string RankSummary::Label() const {
  if (rank < 0)  // "pid 1418 on vm": the pid once
    return "pid " + std::to_string(pid) + (host.empty() ? "" : " on " + host);
  std::string s = "rank " + std::to_string(rank) + " (";
  if (!host.empty()) s += host + ", ";
  s += "pid " + std::to_string(pid) + ")";
  return s;
}

RankSummary SummarizeProcess(const CompactTrace& trace, uint32_t pid, const std::string& source) {
  RankSummary s;
  s.source = source;
  s.pid = pid;
  for (const model::Process& p : trace.meta().Rows<model::Process>()) {
    if (p.pid != pid) continue;
    s.rank = model::KnownRank(p).value_or(-1);  // an importer's 0 is "unknown"
    s.host = std::string(trace.String(p.hostname_id));
  }
  for (const model::ClockAnchor& a : trace.meta().Rows<model::ClockAnchor>())
    if (a.pid == pid) s.anchors.push_back(a);
  std::vector<uint32_t> lanes;
  for (uint32_t l : trace.gpu_lanes())
    if (trace.PidOfLane(l) == pid) lanes.push_back(l);
  const std::vector<uint8_t> nccl = NcclNameMask(trace);
  auto is_nccl = [&](const GpuOp& o) {
    return o.kind() == OpKind::kKernel && o.name_id < nccl.size() && nccl[o.name_id];
  };
  const auto busy = OpUnion(trace, lanes, [](const GpuOp&) { return true; });
  const auto comm = OpUnion(trace, lanes, is_nccl);
  const auto compute = OpUnion(
      trace, lanes, [&](const GpuOp& o) { return o.kind() == OpKind::kKernel && !is_nccl(o); });
  s.gpu_busy_ns = TotalLength(busy);
  s.comm_ns = TotalLength(comm);
  s.compute_ns = TotalLength(compute);
  s.overlap_ns = IntersectionLength(comm, compute);
  s.first_ns = UINT64_MAX;
  for (uint32_t l : lanes) {
    const LaneRange r = trace.lane_range(l);
    for (uint32_t i = r.begin; i < r.end; ++i) {
      const GpuOp o = trace.ops()[i];
      s.kernels += o.kind() == OpKind::kKernel;
      s.first_ns = std::min(s.first_ns, o.start_ns);
      s.last_ns = std::max(s.last_ns, o.end_ns);
    }
  }
  for (const HostCall& c : trace.calls()) {
    if (trace.PidOfLane(c.lane) != pid) continue;
    s.first_ns = std::min(s.first_ns, c.start_ns);
    s.last_ns = std::max(s.last_ns, c.end_ns);
  }
  // NVTX ranges too: a step or "train" range opens before the first call,
  // and the job's Perfetto export starts its time base at the first event.
  for (const NvtxRecord& n : trace.nvtx()) {
    if (trace.PidOfLane(n.lane) != pid) continue;
    s.first_ns = std::min(s.first_ns, n.start_ns);
    s.last_ns = std::max(s.last_ns, n.end_ns);
  }
  if (s.first_ns == UINT64_MAX) s.first_ns = 0;
  s.collectives = ExtractCollectives(trace, pid);
  const StepReport steps = DetectSteps(trace);
  s.step_method = steps.method;
  for (const Step& st : steps.steps) s.steps.push_back({st.begin_ns, st.end_ns});
  s.host_time = MeasureHostTime(trace, pid, s.steps, s.collectives);
  if (s.anchors.empty())
    s.warnings.push_back(
        "no clock anchors: its times cannot be put on the job's clock (left on its own clock; "
        "cross-rank numbers involving it are not meaningful)");
  if (s.collectives.generic_kernels > s.collectives.generic_resolved)
    s.warnings.push_back(
        StrFormat("%llu NCCL Generic kernels with no enclosing NVTX range naming the operation: "
                  "operation unknown",
                  static_cast<unsigned long long>(s.collectives.generic_kernels -
                                                  s.collectives.generic_resolved)));
  return s;
}

Status LoadProcessTrace(const std::string& path, const uint32_t* pid, CompactTrace* out,
                        format::ReadReport* report) {
  if (pid) out->SetProcessFilter(*pid);
  return LoadCompactTrace(path, LoadOptions{}, out, report);  // the whole trace: no window
}

StatusOr<std::vector<RankSummary>> SummarizeFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
  // Metadata first (no event chunk decoded): which processes the file holds.
  std::set<uint32_t> pids;
  Status st = reader->Stream([](const model::Trace&, model::TableKind) { return OkStatus(); },
                             [&](const model::Trace& meta) {
                               for (const model::Process& p : meta.Rows<model::Process>())
                                 pids.insert(p.pid);
                               return OkStatus();
                             },
                             [](model::TableKind) { return false; });
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  const bool merged = pids.size() > 1;
  if (pids.empty()) pids.insert(UINT32_MAX);  // no Process row: whatever the file holds
  std::vector<RankSummary> out;
  for (uint32_t pid : pids) {
    CompactTrace trace;
    format::ReadReport report;
    RETURN_IF_ERROR(LoadProcessTrace(path, merged ? &pid : nullptr, &trace, &report));
    uint32_t p = pid;
    if (p == UINT32_MAX) {
      std::set<uint32_t> seen;
      for (const Lane& l : trace.lanes()) seen.insert(l.pid);
      p = seen.empty() ? 0 : *seen.begin();
      RankSummary s = SummarizeProcess(trace, p, path);
      s.warnings.push_back(seen.size() > 1
                               ? "no process row and events of several pids: read as one rank"
                               : "no process row: rank and host unknown");
      out.push_back(std::move(s));
    } else {
      out.push_back(SummarizeProcess(trace, p, path));
    }
    if (!report.clean())
      out.back().warnings.push_back(report.Headline(path) + ": what it holds is summarised");
  }
  return out;
}

}  // namespace tracesmith::analysis
