#include "tracesmith/analysis/report.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "findings.h"
#include "grouped_quantiles.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/index_column.h"

namespace tracesmith::analysis {

using namespace model;

double AnalysisReport::warmup_share() const {
  return Percent(active.warmup.ns(), active.region_ns());
}

namespace {

template <typename T>
DurationStats StatsOf(std::span<T> v) {
  DurationStats s;
  s.count = v.size();
  if (v.empty()) return s;
  for (T x : v) {
    s.total_ns += x;
    s.max_ns = std::max<uint64_t>(s.max_ns, x);
  }
  s.mean_ns = s.total_ns / s.count;
  s.p95_ns = NearestRank(v, 0.95);
  s.p50_ns = NearestRank(v, 0.5);
  return s;
}

}  // namespace

DurationStats ComputeDurationStats(std::span<uint64_t> v) { return StatsOf(v); }

namespace {

std::string LaneName(const CompactTrace& t, uint32_t lane, bool with_pid) {
  const Lane& l = t.lanes()[lane];
  std::string s = StrFormat("GPU %u stream %u", l.device, l.stream);
  if (with_pid) s = StrFormat("pid %u ", l.pid) + s;
  return s;
}

void KernelTables(const CompactTrace& t, CallSiteNamer& namer, AnalysisReport* r) {
  const auto ops = t.ops();
  const uint32_t nstrings = t.meta().strings.size();
  std::vector<uint32_t> group_of_name(nstrings + 1, kNone);
  std::vector<uint32_t> names;
  // Call sites: one group per distinct text (stacks with the same text merge).
  std::unordered_map<uint32_t, uint32_t> site_of_stack;
  std::map<std::string, uint32_t> site_index;
  std::vector<std::string> sites;
  std::vector<bool> site_unnamed;  // per site: a native frame without a name
  bool any_stack = false;
  // Call sites only when the trace has stacks (a pass over calls, in order).
  bool stacks = false;
  for (const HostCall& c : t.calls()) stacks |= c.stack_id != 0;
  // Each kernel's duration is a sample of its name's group (2g) and its call site's (2s + 1),
  // named at the first pass.
  auto each_kernel = [&](const auto& emit) {
    uint32_t last_stack = kNone, last_site = 0;
    for (uint32_t oi = 0; oi < ops.size(); ++oi) {
      const GpuOp& op = ops[oi];
      if (op.kind() != OpKind::kKernel) continue;
      const uint32_t n = std::min(op.name_id, nstrings);
      if (group_of_name[n] == kNone) {
        group_of_name[n] = static_cast<uint32_t>(names.size());
        names.push_back(n);
      }
      emit(2 * group_of_name[n], op.duration());
      if (!stacks) continue;
      const uint32_t stack = t.StackOfOp(oi);
      any_stack |= stack != 0;
      if (stack != last_stack) {  // consecutive launches mostly share a call site
        auto it = site_of_stack.find(stack);
        if (it == site_of_stack.end()) {
          bool unnamed = false;
          std::string text = namer.Name(stack, &unnamed);
          auto [si, added] = site_index.try_emplace(text, static_cast<uint32_t>(sites.size()));
          if (added) {
            sites.push_back(text);
            site_unnamed.push_back(unnamed);
          }
          it = site_of_stack.emplace(stack, si->second).first;
        }
        last_stack = stack;
        last_site = it->second;
      }
      emit(2 * last_site + 1, op.duration());
    }
  };
  const std::vector<DurationStats> both = GroupedQuantiles::Compute(each_kernel);
  auto part = [&](size_t groups, size_t odd) {
    std::vector<DurationStats> stats(groups);
    for (size_t g = 0; g < groups && 2 * g + odd < both.size(); ++g) stats[g] = both[2 * g + odd];
    return stats;
  };
  std::vector<DurationStats> stats = part(names.size(), 0);
  for (const DurationStats& s : stats) {
    r->kernel_count += s.count;
    r->kernel_ns += s.total_ns;
  }
  for (size_t g = 0; g < names.size(); ++g) {
    std::string name(t.String(names[g]));
    if (name.empty()) name = "(unnamed kernel)";
    r->kernels.push_back({name, stats[g], Percent(stats[g].total_ns, r->kernel_ns)});
  }
  auto by_total = [](const NamedStats& a, const NamedStats& b) {
    return a.stats.total_ns != b.stats.total_ns ? a.stats.total_ns > b.stats.total_ns
                                                : a.name < b.name;
  };
  std::sort(r->kernels.begin(), r->kernels.end(), by_total);
  if (any_stack) {
    stats = part(sites.size(), 1);
    uint64_t unnamed_ns = 0;
    for (size_t g = 0; g < sites.size(); ++g) {
      r->call_sites.push_back({sites[g], stats[g], Percent(stats[g].total_ns, r->kernel_ns)});
      if (site_unnamed[g]) unnamed_ns += stats[g].total_ns;
    }
    r->unnamed_call_site_share = Percent(unnamed_ns, r->kernel_ns);
    std::sort(r->call_sites.begin(), r->call_sites.end(), by_total);
  }
}

void NvtxTable(const CompactTrace& t, AnalysisReport* r) {
  if (t.nvtx().empty()) return;
  // For every API call, the NVTX range names enclosing its start on its
  // thread (a set, so nested ranges with one name count a kernel once).
  std::map<uint32_t, NvtxStats> by_name;
  for (const NvtxRecord& n : t.nvtx()) {
    NvtxStats& s = by_name[n.name_id];
    s.ranges++;
    s.range_ns += n.end_ns - n.start_ns;
  }
  std::vector<std::vector<uint32_t>> sets(1);  // 0 = no range
  std::map<std::vector<uint32_t>, uint32_t> set_index{{{}, 0}};
  // Each call's set (0 for most): packed with packed records (4 bytes a call else).
  IndexColumn call_set;
  call_set.Reset(t.record_form() == RecordForm::kPacked, t.calls().size());
  auto set_of = [&](uint32_t c, uint32_t set) {  // calls in order, those skipped in no range
    while (call_set.size() < c) call_set.Append(0);
    call_set.Append(set);
  };
  const auto& nv = t.nvtx();
  size_t k = 0;
  for (uint32_t lane = 0; lane < t.lanes().size(); ++lane) {
    if (!t.lanes()[lane].host) continue;
    while (k < nv.size() && nv[k].lane < lane) ++k;
    size_t next = k;
    std::vector<uint32_t> active;  // nvtx indexes
    // The set of the active ranges, looked up again only when they change (a range opens
    // or closes: rarely, next to the calls inside them).
    uint32_t set = 0;
    uint64_t closes = UINT64_MAX;  // the earliest end among the active ranges
    const LaneRange cr = t.lane_range(lane);
    const auto calls = t.calls();
    for (uint32_t c = cr.begin; c < cr.end; ++c) {
      const uint64_t ts = calls[c].start_ns;
      bool changed = false;
      for (; next < nv.size() && nv[next].lane == lane && nv[next].start_ns <= ts; ++next) {
        active.push_back(static_cast<uint32_t>(next));
        closes = std::min(closes, nv[next].end_ns);
        changed = true;
      }
      if (closes < ts) {
        std::erase_if(active, [&](uint32_t i) { return nv[i].end_ns < ts; });
        changed = true;
      }
      if (changed) {
        closes = UINT64_MAX;
        std::vector<uint32_t> names;
        for (uint32_t i : active) {
          names.push_back(nv[i].name_id);
          closes = std::min(closes, nv[i].end_ns);
        }
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        auto [it, added] = set_index.try_emplace(names, static_cast<uint32_t>(sets.size()));
        if (added) sets.push_back(names);
        set = it->second;
      }
      if (set) set_of(c, set);
    }
  }
  while (call_set.size() < t.calls().size()) call_set.Append(0);
  for (uint32_t oi = 0; oi < t.ops().size(); ++oi) {
    const GpuOp op = t.ops()[oi];
    if (op.kind() != OpKind::kKernel) continue;
    uint32_t call = t.CallOfOp(oi);
    if (call == kNone) continue;
    for (uint32_t name : sets[call_set[call]]) {
      by_name[name].kernels++;
      by_name[name].kernel_ns += op.duration();
    }
  }
  for (auto& [name, s] : by_name) {
    s.name = std::string(t.String(name));
    s.share = Percent(s.kernel_ns, r->kernel_ns);
    r->nvtx.push_back(s);
  }
  std::sort(r->nvtx.begin(), r->nvtx.end(), [](const NvtxStats& a, const NvtxStats& b) {
    return a.kernel_ns != b.kernel_ns ? a.kernel_ns > b.kernel_ns : a.name < b.name;
  });
}

void CopyTable(const CompactTrace& t, AnalysisReport* r) {
  std::map<std::string, CopyStats> by_dir;
  for (const GpuOp& op : t.ops()) {
    if (op.kind() == OpKind::kKernel) continue;
    const CopyInfo& c = t.copies()[op.extra];
    std::string dir = c.is_memset ? "memset" : CopyKindName(c.copy_kind);
    CopyStats& s = by_dir[dir];
    s.direction = dir;
    s.count++;
    s.bytes += c.bytes;
    s.busy_ns += op.duration();
  }
  for (auto& [d, s] : by_dir) r->copies.push_back(s);
  std::sort(r->copies.begin(), r->copies.end(),
            [](const CopyStats& a, const CopyStats& b) { return a.bytes > b.bytes; });
}

// The launch table's groups: one per API name, numbered as first seen. Calls of one API
// come in runs: the map is looked up once a run.
class ApiGroups {
 public:
  uint32_t Of(uint32_t name) {
    if (name != last_) {
      last_ = name;
      auto [it, added] = index_.try_emplace(name, uint32_t(apis_.size()));
      if (added) apis_.push_back(name);
      group_ = it->second;
    }
    return group_;
  }
  const std::vector<uint32_t>& apis() const { return apis_; }

 private:
  std::map<uint32_t, uint32_t> index_;
  std::vector<uint32_t> apis_;
  uint64_t last_ = UINT64_MAX;  // no name id: the first call looks its group up
  uint32_t group_ = 0;
};

void LaunchTable(const CompactTrace& t, CallSiteNamer& namer, AnalysisReport* r) {
  ApiGroups groups;
  // Launch delay runs to the first op a call issued (a graph launch issues
  // many). Not a start per call (8 bytes per call): which calls issued one op
  // and which several (2 bits per call); one op's is the op OpOfCall finds (ops
  // of one (pid, correlation) all map to one call), several ops' first start
  // is kept for those calls alone.
  const auto calls = t.calls();
  const auto ops = t.ops();
  std::vector<bool> issued(calls.size()), several(calls.size());
  for (uint32_t oi = 0; oi < ops.size(); ++oi) {
    const uint32_t c = t.CallOfOp(oi);
    if (c == kNone) continue;
    if (issued[c]) several[c] = true;
    issued[c] = true;
  }
  for (uint32_t c = 0; c < calls.size(); ++c)
    if (issued[c] && !several[c]) {
      const uint32_t op = t.OpOfCall(c);
      if (op == kNone || t.CallOfOp(op) != c) several[c] = true;  // found apart, as several
    }
  std::unordered_map<uint32_t, uint64_t> first_of_several;
  for (uint32_t oi = 0; oi < ops.size(); ++oi) {
    const uint32_t c = t.CallOfOp(oi);
    if (c == kNone || !several[c]) continue;
    auto [it, added] = first_of_several.try_emplace(c, ops[oi].start_ns);
    if (!added) it->second = std::min(it->second, ops[oi].start_ns);
  }
  auto first_start = [&](uint32_t c) -> uint64_t {
    if (!issued[c]) return UINT64_MAX;
    if (several[c]) return first_of_several.find(c)->second;
    return ops[t.OpOfCall(c)].start_ns;
  };
  auto delay = [&](uint32_t i, const HostCall& c) -> uint64_t {
    const uint64_t first = first_start(i);
    return first > c.start_ns ? first - c.start_ns : 0;
  };
  // Calls that issued GPU work, grouped by API: durations (2g), delays (2g + 1).
  auto each_call = [&](const auto& emit) {
    for (uint32_t i = 0; i < calls.size(); ++i) {
      if (!issued[i]) continue;
      const HostCall& c = calls[i];
      const uint32_t group = groups.Of(c.name_id);
      emit(2 * group, c.duration());
      emit(2 * group + 1, [&] { return delay(i, c); });
    }
  };
  const std::vector<DurationStats> both = GroupedQuantiles::Compute(each_call);
  const std::vector<uint32_t>& apis = groups.apis();
  std::vector<DurationStats> d(apis.size()), l(apis.size());
  for (size_t g = 0; g < apis.size(); ++g) d[g] = both[2 * g], l[g] = both[2 * g + 1];
  std::vector<uint64_t> median(apis.size());
  for (size_t g = 0; g < apis.size(); ++g) {
    r->launches.push_back({std::string(t.String(apis[g])), d[g], l[g], 0});
    median[g] = d[g].p50_ns;
  }
  // Outliers: calls over 10x their API's median duration.
  std::vector<std::pair<uint64_t, uint32_t>> slow;
  for (uint32_t i = 0; i < calls.size(); ++i) {
    if (!issued[i]) continue;
    const HostCall& c = calls[i];
    const uint32_t g = groups.Of(c.name_id);
    if (c.duration() > 10 * median[g]) {
      r->launches[g].outliers++;
      slow.push_back({c.duration(), i});
    }
  }
  std::sort(slow.begin(), slow.end(), std::greater<>());
  if (slow.size() > 5) slow.resize(5);
  if (!slow.empty()) {
    DependencyRules rules(t);
    for (auto [ns, i] : slow) {
      const HostCall c = t.calls()[i];
      const uint32_t op = t.OpOfCall(i);
      LaunchOutlier o;
      o.api = std::string(t.String(c.name_id));
      o.op = rules.Label({NodeKind::kOp, op});
      o.call_site = c.stack_id ? namer.Name(c.stack_id) : "";
      o.start_ns = c.start_ns - t.trace_begin();
      o.api_ns = ns;
      o.delay_ns = delay(i, c);
      r->outliers.push_back(o);
    }
  }
  std::sort(r->launches.begin(), r->launches.end(), [](const LaunchStats& a, const LaunchStats& b) {
    return a.api_duration.count != b.api_duration.count
               ? a.api_duration.count > b.api_duration.count
               : a.api < b.api;
  });
}

void GraphTable(const CompactTrace& t, AnalysisReport* r) {
  std::map<uint32_t, GraphStats> by_graph;
  for (const GraphLaunchRecord& g : t.graph_launches()) {
    by_graph[g.graph_id].graph_id = g.graph_id;
    by_graph[g.graph_id].launches++;
    r->graph_launches++;
  }
  for (const GpuOp& op : t.ops()) {
    const uint32_t graph = t.GraphOfOp(op);
    if (!graph) continue;
    GraphStats& s = by_graph[graph];
    s.graph_id = graph;
    s.kernels++;
    s.kernel_ns += op.duration();
  }
  for (auto& [id, s] : by_graph) r->graphs.push_back(s);
  std::sort(r->graphs.begin(), r->graphs.end(), [](const GraphStats& a, const GraphStats& b) {
    return a.kernel_ns != b.kernel_ns ? a.kernel_ns > b.kernel_ns : a.graph_id < b.graph_id;
  });
}

void CriticalPathTable(const CompactTrace& t, AnalysisReport* r) {
  CriticalPath cp = ComputeCriticalPath(t);
  r->critical_path_ns = cp.ns;
  r->critical_path_nodes = cp.nodes;
  for (auto& [key, ns] : cp.by_name) {
    auto cat = PathCategory(key >> 32);
    std::string name(t.String(static_cast<uint32_t>(key)));
    r->critical_path_top.push_back(
        {std::string(cat == PathCategory::kKernel ? "kernel " : "api ") + name, ns});
  }
  std::sort(r->critical_path_top.begin(), r->critical_path_top.end(),
            [](const PathShare& a, const PathShare& b) {
              return a.ns != b.ns ? a.ns > b.ns : a.name < b.name;
            });
  if (r->critical_path_top.size() > 10) r->critical_path_top.resize(10);
}

}  // namespace

AnalysisReport BuildReport(const CompactTrace& t, const std::string& source,
                           const CallSiteRules& rules) {
  CallSiteNamer namer(t.meta(), rules);
  AnalysisReport r;
  r.source = source;
  r.events = t.ops().size() + t.calls().size() + t.syncs().size() + t.nvtx().size() +
             t.graph_launches().size();
  r.window_begin = t.window_begin();
  r.window_end = t.window_end();
  r.trace_begin = t.trace_begin();
  r.active = t.active_region();
  for (const auto& c : r.active.startup.longest_calls)
    r.startup_call_names.emplace_back(t.String(c.name_id));
  for (const auto& c : r.active.teardown.longest_calls)
    r.teardown_call_names.emplace_back(t.String(c.name_id));
  for (const auto& c : r.active.warmup.longest_calls)
    r.warmup_call_names.emplace_back(t.String(c.name_id));
  r.compact = t.stats();
  // Three threads: the timeline (itself per stream on every core) and the critical path;
  // the launch, copy and graph tables (their own call-site namer: a namer memoizes); the
  // kernel and NVTX tables here. The phases read the trace only and write apart. The
  // correlation indexes they read are built first, once, here, while another thread finds
  // the steps (which need none; chosen steps, as `analyze` has them, take no time). Steps
  // not chosen before take 4 bytes a kernel of the busiest GPU beside the indexes' building
  // (+16 MB at 10 M kernels in `benchmark analyze`); `analyze` at 100 M kernels peaks at
  // 1.84 GB (#41 item 6, docs/benchmarks.md).
  using Clock = std::chrono::steady_clock;
  struct Timed {
    std::vector<std::pair<std::string, double>> phases;
    Clock::time_point t0 = Clock::now();
    void Phase(const char* name) {
      const auto now = Clock::now();
      phases.push_back({name, std::chrono::duration<double>(now - t0).count()});
      t0 = now;
    }
  };
  Timed side_timed, launch_timed, here;
  std::thread steps([&] {
    r.steps = DetectSteps(t);
    side_timed.Phase("steps");
  });
  t.IndexCorrelations();
  here.Phase("correlation indexes");
  steps.join();
  here.Phase("waiting for the steps");
  std::thread side([&] {
    side_timed.t0 = Clock::now();
    r.timeline = ComputeTimeline(t);
    side_timed.Phase("timeline");
    CriticalPathTable(t, &r);
    side_timed.Phase("critical_path");
  });
  std::thread launches([&] {
    launch_timed.t0 = Clock::now();
    CallSiteNamer launch_namer(t.meta(), rules);
    LaunchTable(t, launch_namer, &r);
    launch_timed.Phase("launches");
    CopyTable(t, &r);
    GraphTable(t, &r);
    launch_timed.Phase("copies+graphs");
  });
  KernelTables(t, namer, &r);
  r.gpu_samples = SummarizePcSamples(t, r.kernel_ns, rules);
  r.sass_counts = SummarizeSassCounts(t);
  r.kernel_timeouts = DescribeKernelTimeouts(t, r.gpu_samples, rules);
  r.gpu_metrics = SummarizeGpuMetrics(t, r.window_begin, r.window_end);
  AddGpuMetricSteps(t, r.steps, &r.gpu_metrics);
  r.app_counters = SummarizeAppCounters(t, r.steps);
  here.Phase("kernels");
  NvtxTable(t, &r);  // shares of r.kernel_ns
  here.Phase("nvtx");
  side.join();
  launches.join();
  here.Phase("waiting for the other threads");
  // Each phase's own time, the three threads' in turn.
  for (Timed* w : {&side_timed, &launch_timed, &here})
    r.phase_seconds.insert(r.phase_seconds.end(), w->phases.begin(), w->phases.end());
  std::set<uint32_t> pids;
  for (uint32_t l : t.gpu_lanes()) pids.insert(t.lanes()[l].pid);
  for (const StreamTimeline& s : r.timeline.streams)
    r.stream_names.push_back(LaneName(t, s.lane, pids.size() > 1));
  r.findings = ComputeFindings(t, r);
  here.Phase("findings");
  r.phase_seconds.push_back(here.phases.back());
  return r;
}

}  // namespace tracesmith::analysis
