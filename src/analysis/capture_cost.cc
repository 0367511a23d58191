#include "tracesmith/analysis/capture_cost.h"

#include "tracesmith/base/first_time_cost.h"
#include "tracesmith/model/event_names.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

namespace tracesmith::analysis {
namespace {

constexpr std::string_view kPrefix = "capture.cost.";
// Program-thread sites (capture/capture_cost.h CostSite, disjoint).
// "first_time": work done once per new return address or call stack (its
// time is not in the other sites').
constexpr std::string_view kSites[] = {"launch", "copy",  "memset", "graph",       "sync",
                                       "alloc",  "other", "buffer", "driver_exit", "first_time"};

std::string Fmt(const char* format, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), format, a, b, c);
  return buf;
}

std::string Duration(double ns) {
  if (ns >= 1e9) return Fmt("%.2f s", ns / 1e9);
  if (ns >= 1e6) return Fmt("%.1f ms", ns / 1e6);
  if (ns >= 1e3) return Fmt("%.1f us", ns / 1e3);
  return Fmt("%.0f ns", ns);
}

}  // namespace

void TallyOverhead(const model::OverheadEvent& row, OverheadTally* tally) {
  const char* name = model::OverheadKindName(row.overhead_kind);
  std::string kind = name ? name : "kind " + std::to_string(row.overhead_kind);
  CaptureCost::Overhead& o = (*tally)[row.pid][kind];
  if (o.count == 0) o.kind = std::move(kind);
  o.own = model::IsOwnOverheadKind(row.overhead_kind);
  const double ns = double(row.end_ns > row.start_ns ? row.end_ns - row.start_ns : 0);
  ++o.count;
  o.total_ns += ns;
  o.max_ns = std::max(o.max_ns, ns);
}

std::vector<CaptureCost> ComputeCaptureCost(const model::Trace& trace) {
  std::map<uint32_t, uint64_t> kernels;
  for (const model::KernelEvent& k : trace.Rows<model::KernelEvent>()) ++kernels[k.pid];
  OverheadTally overheads;
  for (const model::OverheadEvent& o : trace.Rows<model::OverheadEvent>())
    TallyOverhead(o, &overheads);
  return ComputeCaptureCost(trace, kernels, overheads);
}

std::vector<CaptureCost> ComputeCaptureCost(const model::Trace& trace,
                                            const std::map<uint32_t, uint64_t>& kernels,
                                            const OverheadTally& overheads) {
  // pid -> stat name (after the prefix) -> value
  std::map<uint32_t, std::map<std::string, int64_t, std::less<>>> stats;
  for (const model::Stat& s : trace.Rows<model::Stat>()) {
    std::string_view name = trace.strings.Get(s.name_id);
    if (name.substr(0, kPrefix.size()) != kPrefix) continue;
    stats[s.pid][std::string(name.substr(kPrefix.size()))] = s.value;
  }

  std::vector<CaptureCost> out;
  for (const auto& entry : stats) {
    const uint32_t pid = entry.first;
    const auto& m = entry.second;  // (not a structured binding: lambdas capture it)
    auto get = [&m](const std::string& key) -> double {
      auto it = m.find(key);
      return it == m.end() ? 0.0 : double(it->second);
    };
    auto calls = [&m](const std::string& key) -> uint64_t {
      auto it = m.find(key);
      return it == m.end() || it->second < 0 ? 0 : uint64_t(it->second);
    };
    CaptureCost c;
    c.pid = pid;
    auto k = kernels.find(pid);
    c.kernels = k == kernels.end() ? 0 : k->second;
    auto part = [&](const std::string& s, double ns, uint64_t n) {
      CaptureCost::Part p{s, ns, n};
      p.p50_ns = get(s + ".p50_ns");
      p.p99_ns = get(s + ".p99_ns");
      p.slow_share = get(s + ".slow_share_x1000") / 1000;
      p.has_max = m.count(s + ".max_ns") > 0;
      p.p999_ns = get(s + ".p999_ns");
      p.max_ns = get(s + ".max_ns");
      // The percentiles are histogram bucket bounds, the maximum exact: no
      // percentile above the slowest call (the shipped trace's p99.9 42.7 us
      // over its max 41.9 us).
      if (p.has_max)
        for (double* q : {&p.p50_ns, &p.p99_ns, &p.p999_ns}) *q = std::min(*q, p.max_ns);
      p.over_100us = calls(s + ".over_100us");
      for (const char* cls : {"preempted", "blocked", "faulted", "interrupted", "unexplained"})
        if (uint64_t n = calls(s + ".slow_" + cls)) p.slow_classes.emplace_back(cls, n);
      return p;
    };
    for (std::string_view site : kSites) {
      std::string s(site);
      double ns = get(s + ".ns");
      if (ns <= 0 && calls(s + ".calls") == 0) continue;
      c.sites.push_back(part(s, ns, calls(s + ".calls")));
      c.program_ns += ns;
      if (s == "first_time") c.first_time_ns = ns;
    }
    c.first_time_max_ns = get("first_time.max_ns");
    c.first_time_call_max_ns = get("first_time.call_max_ns");
    for (const char* kind : kFirstTimeKindNames) {
      const std::string s = std::string("first_time.") + kind;
      if (uint64_t n = calls(s + ".calls"))
        c.first_time_kinds.push_back(
            {kind, n, get(s + ".ns"), get(s + ".max_ns"), get(s + ".in_call_max_ns")});
    }
    if (auto o = overheads.find(pid); o != overheads.end()) {
      for (const auto& kind : o->second) (kind.second.own ? c.own : c.cupti).push_back(kind.second);
      for (auto* v : {&c.cupti, &c.own})
        std::stable_sort(v->begin(), v->end(),
                         [](const auto& a, const auto& b) { return a.max_ns > b.max_ns; });
    }
    double stack_ns = get("stack.ns");
    if (stack_ns > 0) {
      double unwind = get("stack.unwind.ns"), python = get("stack.python.ns");
      uint64_t n = calls("stack.calls");
      c.stack.push_back(part("stack", stack_ns, n));
      c.stack.push_back(part("stack.unwind", unwind, n));
      if (python > 0) c.stack.push_back(part("stack.python", python, n));
      // (what is left of the stack's time: no distribution of its own)
      c.stack.push_back({"stack.dedup", std::max(0.0, stack_ns - unwind - python), n});
      // Diagnostic runs only: the same walks again at once, caches warm.
      if (get("stack.rewalk.ns") > 0)
        c.stack.push_back(part("stack.rewalk", get("stack.rewalk.ns"), n));
      // Diagnostic runs only: a copy of the stack span the walk read.
      if (get("stack.copy.ns") > 0) {
        c.stack.push_back(part("stack.copy", get("stack.copy.ns"), n));
        c.copy_bytes = get("stack.copy.bytes_mean");
      }
      c.native_frames = get("stack.frames_native_x1000") / 1000;
      c.python_frames = get("stack.frames_python_x1000") / 1000;
      c.memo_hits = calls("stack.memo_hits");
      c.memo_partial = calls("stack.memo_partial");
      c.memo_misses = calls("stack.memo_misses");
      c.memo_frames_replayed = calls("stack.memo_frames_replayed");
      c.memo_frames_walked = calls("stack.memo_frames_walked");
    }
    for (const char* phase : {"flush", "convert", "drain", "write"})
      c.writer.push_back(
          {std::string("writer.") + phase, get(std::string("writer.") + phase + "_ns"), 0});
    c.writer_cpu_ns = get("writer.total_ns");
    auto by_ns = [](const CaptureCost::Part& a, const CaptureCost::Part& b) { return a.ns > b.ns; };
    std::stable_sort(c.sites.begin(), c.sites.end(), by_ns);
    std::stable_sort(c.writer.begin(), c.writer.end(), by_ns);
    out.push_back(std::move(c));
  }
  return out;
}

std::string CaptureCostLine(const CaptureCost& c) {
  std::string line = "capture cost: ";
  if (c.kernels) {
    line += Fmt("%.2f us per launch", c.UsPerLaunch()) + " on the program's threads (" +
            Duration(c.program_ns) + " in all";
    if (c.first_time_ns > 0)
      line += Fmt("; %.2f us per launch without first-time work",
                  (c.program_ns - c.first_time_ns) / 1e3 / double(c.kernels));
    line += ")";
  } else
    line += Duration(c.program_ns) + " on the program's threads (no kernel launches)";
  return line + ", " + Duration(c.writer_cpu_ns) + " CPU in the writer";
}

std::vector<std::string> CaptureCostDetails(const CaptureCost& c) {
  std::vector<std::string> out;
  auto per = [&](const CaptureCost::Part& p) {
    std::string s = p.name + ": " + Duration(p.ns);
    if (p.calls)
      s += " in " + std::to_string(p.calls) + " calls (" + Duration(p.ns / double(p.calls)) +
           " each)";
    if (c.kernels && p.ns > 0) s += Fmt(", %.3f us per launch", p.ns / 1e3 / double(c.kernels));
    if (p.name == "first_time")
      s += " (a thread's stack bounds, walk memo and rings, unwind rules for new return addresses, "
           "new call stacks: paid once each)";
    if (p.p50_ns > 0) {
      s += "; one call: median " + Duration(p.p50_ns) + ", p99 " + Duration(p.p99_ns);
      if (p.has_max) s += ", p99.9 " + Duration(p.p999_ns) + ", max " + Duration(p.max_ns);
      if (p.slow_share >= 0.001)
        s += Fmt(", %.1f%% of the time in calls over 10 us", 100 * p.slow_share);
      if (p.over_100us)
        s += ", " + std::to_string(p.over_100us) + (p.over_100us == 1 ? " call" : " calls") +
             " of 100 us or more";
      // The probe times each call exactly (the count above is by histogram bucket).
      uint64_t classed = 0;
      for (const auto& c : p.slow_classes) classed += c.second;
      for (size_t i = 0; i < p.slow_classes.size(); ++i)
        s += (i ? ", "
                : " (slow-call probe, " + std::to_string(classed) +
                      (classed == 1 ? " call" : " calls") + " of 100 us or more by exact time: ") +
             std::to_string(p.slow_classes[i].second) + " " + p.slow_classes[i].first +
             (i + 1 == p.slow_classes.size() ? ")" : "");
    }
    if (p.name == "first_time" && c.first_time_max_ns > 0)
      s += "; the longest " + Duration(c.first_time_max_ns);
    if (p.name == "first_time" && c.first_time_call_max_ns > 0) {
      s += "; in one callback at most " + Duration(c.first_time_call_max_ns);
      std::string parts;  // that callback's pieces by kind, largest first
      std::vector<const CaptureCost::FirstTimeKindCost*> kinds;
      for (const auto& k : c.first_time_kinds)
        if (k.in_call_max_ns > 0) kinds.push_back(&k);
      std::stable_sort(kinds.begin(), kinds.end(),
                       [](auto* a, auto* b) { return a->in_call_max_ns > b->in_call_max_ns; });
      for (const auto* k : kinds)
        parts += (parts.empty() ? "" : ", ") + k->kind + " " + Duration(k->in_call_max_ns);
      if (!parts.empty()) s += " (" + parts + ")";
    }
    return s;
  };
  for (const auto& p : c.sites) {
    if (p.ns <= 0) continue;
    out.push_back(per(p));
    if (p.name == "first_time")
      for (const auto& k : c.first_time_kinds)
        out.push_back("  first_time." + k.kind + ": " + std::to_string(k.calls) +
                      (k.calls == 1 ? " piece, " : " pieces, ") + Duration(k.ns) +
                      ", the longest " + Duration(k.max_ns));
  }
  for (const auto& p : c.stack) {
    std::string s = per(p);
    if (p.name == "stack")
      s += Fmt(" [%.1f native + %.1f Python frames per stack]", c.native_frames, c.python_frames);
    if (p.name == "stack.copy") s += Fmt(" [%.0f bytes per copy]", c.copy_bytes);
    out.push_back("  " + s);
    uint64_t walks = c.memo_hits + c.memo_partial + c.memo_misses;
    uint64_t steps = c.memo_frames_replayed + c.memo_frames_walked;
    if (p.name == "stack.unwind" && walks && steps)
      out.push_back("    " +
                    Fmt("walk memo: %.1f%% of walks replayed whole, %.1f%% in part; ",
                        100.0 * double(c.memo_hits) / double(walks),
                        100.0 * double(c.memo_partial) / double(walks)) +
                    Fmt("%.1f%% of frames replayed without unwinding",
                        100.0 * double(c.memo_frames_replayed) / double(steps)));
  }
  for (const auto& p : c.writer)
    if (p.ns > 0) out.push_back(p.name + ": " + Duration(p.ns) + " CPU");
  // One line per list of overhead rows: each kind's count, total and longest.
  auto rows = [&out](std::string s, const std::vector<CaptureCost::Overhead>& list) {
    if (list.empty()) return;
    for (const auto& o : list)
      s += " " + o.kind + " " + std::to_string(o.count) + "x, " + Duration(o.total_ns) +
           " in all, max " + Duration(o.max_ns) + ";";
    s.back() = '.';
    out.push_back(std::move(s));
  };
  rows(
      "CUPTI's own work (its overhead rows, inside the program's CUDA calls or the writer's "
      "flushes):",
      c.cupti);
  rows(
      "TraceSmith's calls into CUPTI on its own threads (the program's CUDA calls wait for "
      "CUPTI while one runs):",
      c.own);
  return out;
}

}  // namespace tracesmith::analysis
