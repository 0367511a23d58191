// The kernel page of one launch (kernel_page.h, "One launch"): the launch by
// correlation id, its share of each drain window of its function's samples,
// and those windows' rows read from the file again.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "kernel_page_lines.h"
#include "tracesmith/analysis/kernel_page.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

// The kernel op of `q` (an index into t.ops()), and a note when it is one of
// several that share its correlation id.
StatusOr<uint32_t> FindLaunch(const CompactTrace& t, const LaunchQuery& q, std::string* note) {
  if (q.correlation_id == 0)
    return InvalidArgument("--launch 0: CUPTI numbers correlation ids from 1");
  std::vector<uint32_t> found;
  std::set<uint32_t> pids;
  for (uint32_t i = 0; i < t.ops().size(); ++i) {
    const GpuOp op = t.ops()[i];
    if (op.kind() != OpKind::kKernel || op.correlation_id != q.correlation_id) continue;
    const uint32_t pid = t.PidOfLane(op.lane());
    if (q.pid && pid != *q.pid) continue;
    if (!q.name.empty() && t.String(op.name_id).find(q.name) == std::string_view::npos) continue;
    found.push_back(i);
    pids.insert(pid);
  }
  const std::string id = std::to_string(q.correlation_id);
  if (found.empty())
    return NotFound("no kernel launch has correlation id " + id +
                    (q.pid ? " in process " + std::to_string(*q.pid) : std::string()) +
                    (q.name.empty() ? std::string() : " and a name containing '" + q.name + "'") +
                    " (`tracesmith view TRACE --kind kernel` shows each launch's correlation_id)");
  if (pids.size() > 1) {
    std::string list;
    for (uint32_t pid : pids) list += (list.empty() ? "" : ", ") + std::to_string(pid);
    return InvalidArgument("correlation id " + id + " names kernel launches in processes " + list +
                           " (ids are per process): choose one with --pid");
  }
  std::set<std::string_view> names;
  for (uint32_t i : found) names.insert(t.String(t.ops()[i].name_id));
  if (names.size() > 1) {
    std::string list;
    for (std::string_view n : names) list += "\n  " + std::string(n);
    return InvalidArgument("correlation id " + id + " is a graph launch of " +
                           std::to_string(found.size()) +
                           " kernels: name the one to show (tracesmith kernel TRACE NAME "
                           "--launch " +
                           id + "):" + list);
  }
  auto first = std::min_element(found.begin(), found.end(), [&](uint32_t a, uint32_t b) {
    return t.ops()[a].start_ns < t.ops()[b].start_ns;
  });
  if (found.size() > 1)
    *note = "the first of " + std::to_string(found.size()) +
            " launches of the kernel that share this correlation id (a graph launch)";
  return *first;
}

// A drain window by its (start, end) on the analysis clock.
using WindowKey = std::pair<uint64_t, uint64_t>;

}  // namespace

StatusOr<KernelPage> BuildLaunchPage(const CompactTrace& t, const std::string& path,
                                     const LaunchQuery& q, const CallSiteRules& rules) {
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(path));
  return BuildLaunchPage(t, *source, q, rules);
}

StatusOr<KernelPage> BuildLaunchPage(const CompactTrace& t, format::TraceSource& source,
                                     const LaunchQuery& q, const CallSiteRules& rules) {
  ASSIGN_OR_RETURN(const PcSampleReport all, SampledReport(t, rules));
  KernelPageLaunch launch;
  ASSIGN_OR_RETURN(const uint32_t op_index, FindLaunch(t, q, &launch.note));
  const GpuOp op = t.ops()[op_index];
  const Lane& lane = t.lanes()[op.lane()];
  launch.correlation_id = q.correlation_id;
  launch.pid = lane.pid;
  launch.device = lane.device;
  launch.stream = lane.stream;
  launch.start_ns = op.start_ns;
  launch.end_ns = op.end_ns;
  launch.offset_ns = op.start_ns - std::min(op.start_ns, t.trace_begin());
  const FunctionSamples* f = nullptr;
  for (const FunctionSamples& s : all.functions)
    if (s.pid == launch.pid && s.name_id == op.name_id) f = &s;
  if (f == nullptr)
    return NotFound("launch " + std::to_string(q.correlation_id) + " runs " +
                    std::string(t.String(op.name_id)) +
                    ", which has no GPU instruction samples; the sampled kernels with most GPU "
                    "time:" +
                    SampledKernelNames(all));
  KernelPage page;
  page.function = *f;
  // The function's launches (op indexes), by start.
  const auto ops = t.ops();
  std::vector<uint32_t> launches;
  for (uint32_t i = 0; i < ops.size(); ++i) {
    const GpuOp o = ops[i];
    if (o.kind() == OpKind::kKernel && o.name_id == op.name_id &&
        t.PidOfLane(o.lane()) == launch.pid)
      launches.push_back(i);
  }
  std::stable_sort(launches.begin(), launches.end(),
                   [&](uint32_t a, uint32_t b) { return ops[a].start_ns < ops[b].start_ns; });
  launch.launches = launches.size();
  launch.index =
      size_t(std::find(launches.begin(), launches.end(), op_index) - launches.begin()) + 1;
  uint64_t longest = 0;
  for (uint32_t o : launches) longest = std::max(longest, ops[o].duration());
  // Its part of each window it ran in: its time there over all the
  // function's launches' time there (JoinSamplesToSites's rule).
  std::map<WindowKey, double> part;
  std::set<uint32_t> others;
  for (const PcSamples::Window& w : t.pc_samples().windows()) {
    if (w.pid != f->pid || w.function_id != f->function_id) continue;
    const WindowSpan span = SpanOf(w);
    const uint64_t mine = OverlapNs(span, op.start_ns, op.end_ns);
    if (mine == 0 || part.count({w.start_ns, w.end_ns})) continue;
    uint64_t total = 0;
    auto l = std::lower_bound(launches.begin(), launches.end(),
                              span.from > longest ? span.from - longest : 0,
                              [&](uint32_t o, uint64_t from) { return ops[o].start_ns < from; });
    bool shared = false;
    for (; l != launches.end() && ops[*l].start_ns < span.to; ++l) {
      const GpuOp other = ops[*l];
      const uint64_t ns = OverlapNs(span, other.start_ns, other.end_ns);
      total += ns;
      if (ns && *l != op_index) shared = true, others.insert(*l);
    }
    part[{w.start_ns, w.end_ns}] = double(mine) / double(std::max(total, mine));
    ++launch.windows;
    launch.shared_windows += shared;
  }
  launch.other_launches = others.size();
  launch.joined = !part.empty();
  if (!launch.joined) {  // nothing to join: the function's samples, said so
    page.lines = PageLines(t, *f, SamplesOf(t, *f), f->samples);
    page.launch = std::move(launch);
    return page;
  }
  // The windows' rows, on the analysis clock as the windows are.
  std::map<std::tuple<uint64_t, uint32_t, uint32_t>, double> joined;  // (cubin, pc, stall)
  const ClockMap* clock = t.ClockOf(f->pid);
  Status st = source.Stream(
      [&](const model::Trace& batch, model::TableKind) {
        for (const model::PcSampleEvent& e : batch.Rows<model::PcSampleEvent>()) {
          if (e.pid != f->pid || e.function_id != f->function_id) continue;
          uint64_t s = e.start_ns, end = std::max(e.start_ns, e.end_ns);
          ConvertInterval(clock, &s, &end);
          auto it = part.find({s, end});
          if (it != part.end())
            joined[{e.cubin_crc, e.pc_offset, e.stall_id}] += double(e.samples) * it->second;
        }
        return OkStatus();
      },
      {}, [](model::TableKind kind) { return kind == model::TableKind::kPcSample; });
  if (!st.ok() && !source.name().empty())
    return Status(st.code(), source.name() + ": " + st.message());
  RETURN_IF_ERROR(st);
  InstructionSamples pcs;
  std::map<uint32_t, uint64_t> stalls;
  for (const auto& [where, n] : joined) {
    const auto& [cubin, pc, stall] = where;
    const uint64_t samples = static_cast<uint64_t>(std::llround(n));
    if (samples == 0) continue;
    pcs[{cubin, pc}][stall] += samples;
    stalls[stall] += samples;
    if (model::IsCountedStall(t.String(stall))) launch.samples += samples;
  }
  launch.stalls = StallShares(stalls, t.meta(), launch.samples);
  page.lines = PageLines(t, *f, pcs, launch.samples);
  page.launch = std::move(launch);
  return page;
}

}  // namespace tracesmith::analysis
