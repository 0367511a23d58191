// The terminal form of the analysis report.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <set>

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/printable.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::analysis {

namespace {

class Printer {
 public:
  explicit Printer(std::ostream& out) : out_(out) {}
  void operator()(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out_ << buf;
  }

 private:
  std::ostream& out_;
};

// A name from the trace, shortened to n characters and safe for a terminal.
std::string Cut(const std::string& name, size_t n) {
  std::string s = Printable(name);
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

// Shortened in the middle to n characters: both ends stay.
std::string CutMiddle(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  const size_t head = (n - 3) / 2;
  return s.substr(0, head) + "..." + s.substr(s.size() - (n - 3 - head));
}

// A call site: "the program's line > the library frame" is shortened in the
// middle of each part, so both files and lines (at the parts' ends) stay.
std::string CutCallSite(const std::string& name, size_t n) {
  const std::string s = Printable(name);
  const size_t sep = s.find(" > ");
  if (s.size() <= n || sep == std::string::npos) return CutMiddle(s, n);
  const std::string a = s.substr(0, sep), b = s.substr(sep + 3);
  const size_t room = n - 3;
  // A part that fits in half keeps all of it; the other takes the rest.
  const size_t a_room = b.size() <= room / 2   ? room - b.size()
                        : a.size() <= room / 2 ? a.size()
                                               : room / 2;
  return CutMiddle(a, a_room) + " > " + CutMiddle(b, room - a_room);
}

std::string D(uint64_t ns) { return HumanDuration(ns); }
unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

void StatsTable(Printer& p, const char* title, const std::vector<NamedStats>& rows, size_t top,
                bool call_sites = false) {
  p("\n%s\n", title);
  p("  %8s %8s %12s %11s %11s %11s %11s  %s\n", "SHARE", "COUNT", "TOTAL", "MEAN", "P50", "P95",
    "MAX", "NAME");
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const DurationStats& s = rows[i].stats;
    p("  %7.1f%% %8llu %12s %11s %11s %11s %11s  %s\n", rows[i].share, U(s.count),
      D(s.total_ns).c_str(), D(s.mean_ns).c_str(), D(s.p50_ns).c_str(), D(s.p95_ns).c_str(),
      D(s.max_ns).c_str(),
      (call_sites ? CutCallSite(rows[i].name, 100) : Cut(rows[i].name, 90)).c_str());
  }
  if (rows.size() > top) p("  ... %zu more (use --top N)\n", rows.size() - top);
}

// "Kernel timeouts": each kernel that ran past --kernel-timeout, its launching
// code and where its warps were.
// A metric value with its unit: "71.3%", "12.5 GB/s", "0.843".
std::string MetricValue(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  if (unit == "%") return StrFormat("%.1f%%", v);
  if (unit.ends_with("/s")) {
    const char* scale[] = {"", "K", "M", "G", "T"};
    int i = 0;
    for (; i < 4 && std::fabs(v) >= 1000; ++i) v /= 1000;
    return StrFormat("%.3g %s%s", v, scale[i], unit == "/s" ? "/s" : unit.c_str());
  }
  return StrFormat("%.4g%s%s", v, unit.empty() ? "" : " ", unit.c_str());
}

// "Program counters": each counter the program reported (tracesmith.counter),
// then per step its mean [min, max] next to the step's wall and GPU time (the
// first 4 counters, `top` steps), and the notes of strong correlations.
void AppCountersSection(Printer& p, const AppCountersReport& a, const StepReport& steps,
                        size_t top) {
  p("\nProgram counters (tracesmith.counter / app.h: %llu values%s)\n", U(a.values),
    a.dropped ? StrFormat(", %llu past the analysis's bound not read", U(a.dropped)).c_str() : "");
  auto v = [](double x) { return std::isfinite(x) ? StrFormat("%.4g", x) : std::string("-"); };
  p("  %-28s %9s %11s %11s %11s %11s\n", "COUNTER", "VALUES", "MIN", "MEAN", "MAX", "LAST");
  for (const AppCounterStat& c : a.counters)
    p("  %-28s %9llu %11s %11s %11s %11s\n", Cut(c.name, 28).c_str(), U(c.values), v(c.min).c_str(),
      v(c.mean).c_str(), v(c.max).c_str(), v(c.last).c_str());
  if (steps.steps.empty()) {
    p("  (no steps found: values per step need steps, see \"Steps\")\n");
    return;
  }
  const size_t shown = std::min<size_t>(a.counters.size(), 4);
  p("  Per step: each counter's mean [min, max] in the step\n  %6s %11s %11s", "STEP", "WALL",
    "GPU BUSY");
  for (size_t c = 0; c < shown; ++c) p("  %-26s", Cut(a.counters[c].name, 26).c_str());
  p("\n");
  for (size_t s = 0; s < steps.steps.size() && s < top; ++s) {
    p("  %6u %11s %11s", steps.first_number + uint32_t(s), D(steps.steps[s].ns()).c_str(),
      D(steps.steps[s].gpu_busy_ns).c_str());
    for (size_t c = 0; c < shown; ++c) {
      const AppCounterStep& cs = a.counters[c].steps[s];
      p("  %-26s", cs.values ? StrFormat("%s [%s, %s]", v(cs.mean).c_str(), v(cs.min).c_str(),
                                         v(cs.max).c_str())
                                   .c_str()
                             : "-");
    }
    p("\n");
  }
  if (steps.steps.size() > top) p("  ... %zu more steps (use --top N)\n", steps.steps.size() - top);
  for (const AppCounterStat& c : a.counters)
    if (!c.note.empty()) p("  Note: %s.\n", Printable(c.note).c_str());
}

// Per step, the first kGpuMetricStepColumns columns (the default set's most
// telling ones come first: SM, tensor, DRAM, SM throughput); JSON has them all.
constexpr size_t kGpuMetricStepColumns = 4;
void GpuMetricStepsTable(Printer& p, const GpuMetricsReport& g, size_t top) {
  if (g.steps.empty()) return;
  const size_t n = std::min(g.columns.size(), kGpuMetricStepColumns);
  p("  Per step (time-weighted means over each step, every GPU)%s\n",
    g.columns.size() > n ? StrFormat("; the first %zu metrics (--json has all)", n).c_str() : "");
  p("    %6s %11s", "STEP", "WALL");
  for (size_t c = 0; c < n; ++c) p(" %20s", Cut(GpuMetricHeading(g, c), 20).c_str());
  p("\n");
  for (size_t i = 0; i < g.steps.size() && i < top; ++i) {
    const GpuMetricStep& s = g.steps[i];
    p("    %6u %11s", s.number, D(s.ns).c_str());
    for (size_t c = 0; c < n && c < s.values.size(); ++c)
      p(" %20s", std::isnan(s.values[c]) ? "-" : MetricValue(s.values[c], g.units[c]).c_str());
    p("\n");
  }
  if (g.steps.size() > top) p("    ... %zu more steps (use --top N)\n", g.steps.size() - top);
}

// "GPU metrics": each device's metrics over the window, then per kernel name
// while it ran alone and while it shared its GPU.
void GpuMetricsSection(Printer& p, const GpuMetricsReport& g, size_t top) {
  p("\nGPU metrics (PM sampling: %llu metric samples%s)\n", U(g.samples),
    g.merged > 1 ? StrFormat(", up to %u merged into one for the analysis", g.merged).c_str() : "");
  std::set<uint32_t> pids;
  for (const GpuMetricStat& m : g.metrics) pids.insert(m.pid);
  p("  %-12s %-34s %12s %12s %9s\n", "DEVICE", "METRIC", "MEAN", "MAX", "SAMPLES");
  for (const GpuMetricStat& m : g.metrics)
    p("  %-12s %-34s %12s %12s %9llu\n",
      (pids.size() > 1 ? StrFormat("%u/GPU %u", m.pid, m.device) : StrFormat("GPU %u", m.device))
          .c_str(),
      Cut(m.label.empty() ? m.name : m.label, 34).c_str(), MetricValue(m.mean, m.unit).c_str(),
      MetricValue(m.max, m.unit).c_str(), U(m.samples));
  GpuMetricStepsTable(p, g, top);
  if (g.kernels.empty()) return;
  p("  Per kernel, time-weighted over the samples while it ran alone on its GPU; \"shared\": "
    "while other kernels ran beside it (the metrics then measure them together)\n");
  auto values = [&](const std::vector<double>& v) {
    std::string s;
    for (size_t c = 0; c < v.size(); ++c)
      if (!std::isnan(v[c]))
        s += (s.empty() ? "" : ", ") + GpuMetricHeading(g, c) + " " + MetricValue(v[c], g.units[c]);
    return s.empty() ? std::string("no sample") : s;
  };
  for (size_t i = 0; i < g.kernels.size() && i < top; ++i) {
    const GpuMetricKernel& k = g.kernels[i];
    const uint64_t total = k.alone_ns + k.shared_ns;
    p("  %s\n", Cut(k.name, 100).c_str());
    if (k.alone_ns)
      p("    alone  %s (%.0f%%): %s\n", D(k.alone_ns).c_str(), Percent(k.alone_ns, total),
        values(k.alone).c_str());
    if (k.shared_ns)
      p("    shared %s (%.0f%%): %s\n", D(k.shared_ns).c_str(), Percent(k.shared_ns, total),
        values(k.shared).c_str());
  }
  if (g.kernels.size() > top) p("  ... %zu more kernels (use --top N)\n", g.kernels.size() - top);
}

void KernelTimeouts(Printer& p, const std::vector<KernelTimeoutReport>& timeouts) {
  p("\nKernel timeouts (profile --kernel-timeout %s)\n",
    HumanDuration(timeouts[0].timeout_ns).c_str());
  for (const KernelTimeoutReport& k : timeouts) {
    p("  %s  still running %s after it started (launched %s before)%s\n", Cut(k.name, 80).c_str(),
      HumanDuration(k.running_ns).c_str(), HumanDuration(k.since_launch_ns).c_str(),
      k.ended ? "; the program was ended" : "");
    p("    launched from: %s\n", Cut(k.site, 100).c_str());
    std::string text;
    for (size_t i = 0; i < k.lines.size() && i < 3; ++i)
      text += StrFormat("%s%s %.1f%%", i ? ", " : "",
                        SourceLineText(k.lines[i].file, k.lines[i].line).c_str(), k.lines[i].share);
    for (size_t i = 0; i < k.stalls.size() && i < 2; ++i)
      text += StrFormat("%s%s %.0f%%", i ? ", " : "; stall reasons: ",
                        Printable(model::ShortStallName(k.stalls[i].reason)).c_str(),
                        k.stalls[i].share);
    p("    its warps:     %s\n", text.empty() ? "(no samples)" : text.c_str());
  }
}

// "Instructions executed": the counted functions (--sass-counts) with most
// executed warp instructions, each with its first opcodes.
void CountedKernels(Printer& p, const std::vector<FunctionCounts>& counted, size_t shown) {
  p("\nInstructions executed (exact counts, --sass-counts: %zu functions; `tracesmith kernel "
    "FILE NAME` shows each instruction)\n",
    counted.size());
  bool several = false;  // processes: each function says whose it is
  for (const FunctionCounts& f : counted) several |= f.pid != counted[0].pid;
  for (size_t i = 0; i < counted.size() && i < shown; ++i) {
    const FunctionCounts& f = counted[i];
    std::string text = (several ? StrFormat("pid %u ", f.pid) : "") + Cut(f.name, 70);
    text += StrFormat("  %s warp instructions", ExactCount(f.executed).c_str());
    if (f.threads())
      text += StrFormat(" (%.1f threads each)", double(f.thread_executed) / double(f.executed));
    text += StrFormat(" in %llu launch%s", static_cast<unsigned long long>(f.kernels),
                      f.kernels == 1 ? "" : "es");
    p("  %s\n", text.c_str());
    text.clear();
    for (size_t k = 0; k < f.opcodes.size() && k < 5; ++k)
      text += StrFormat(
          "%s%s %.1f%%", k ? ", " : "",
          f.opcodes[k].opcode.empty() ? "(no SASS text)" : Printable(f.opcodes[k].opcode).c_str(),
          f.opcodes[k].share);
    if (f.opcodes.size() > 5) text += StrFormat(", %zu more", f.opcodes.size() - 5);
    p("    opcodes: %s\n", text.c_str());
  }
}

// "Inside the kernels": the sampled functions with the most GPU time, each with its stall
// reasons, source lines and instructions.
void SampledKernels(Printer& p, const PcSampleReport& s, size_t shown) {
  p("\nInside the kernels (GPU instruction samples: %s in %zu functions%s)\n",
    SampleCount(s.samples).c_str(), s.functions.size(),
    s.window_narrower ? "; samples of the whole trace, GPU time of the window" : "");
  bool several = false;  // processes: each function says whose it is
  for (const FunctionSamples& f : s.functions) several |= f.pid != s.functions[0].pid;
  for (size_t i = 0; i < s.functions.size() && i < shown; ++i) {
    const FunctionSamples& f = s.functions[i];
    std::string text = (several ? StrFormat("pid %u ", f.pid) : "") + Cut(f.name, 70) + "  ";
    text += f.kernel_ns ? StrFormat("%.1f%% of GPU time", f.gpu_share) : "no kernel in the window";
    text += StrFormat(", %.1f%% of %s samples", f.share, SampleCount(s.samples).c_str());
    for (size_t k = 0; k < f.stalls.size() && k < 2; ++k) {
      if (k > 0 && f.stalls[k].share < 10) break;
      text += StrFormat("%s%s %.0f%%", k ? ", " : ": ",
                        StallDescription(f.stalls[k].reason).c_str(), f.stalls[k].share);
    }
    if (!f.lines.empty() && f.lines[0].file.empty())
      text += StrFormat("; %.0f%% without line info (compile with -lineinfo)", f.lines[0].share);
    else if (!f.lines.empty())
      text += StrFormat("; hottest line %s (%.0f%%)",
                        SourceLineText(f.lines[0].file, f.lines[0].line).c_str(), f.lines[0].share);
    p("  %s\n", text.c_str());
    text.clear();
    for (size_t k = 0; k < f.stalls.size() && k < 5; ++k)
      text += StrFormat("%s%s %.1f%%", k ? ", " : "",
                        Printable(model::ShortStallName(f.stalls[k].reason)).c_str(),
                        f.stalls[k].share);
    if (f.stalls.size() > 5) text += StrFormat(", %zu more", f.stalls.size() - 5);
    p("    stall reasons: %s\n", text.c_str());
    text.clear();
    for (size_t k = 0; k < f.lines.size() && k < 3; ++k)
      text += StrFormat("%s%s %.1f%%", k ? ", " : "",
                        SourceLineText(f.lines[k].file, f.lines[k].line).c_str(), f.lines[k].share);
    p("    source lines:  %s\n", text.c_str());
    text.clear();
    for (size_t k = 0; k < f.instructions.size() && k < 3; ++k) {
      const InstructionShare& n = f.instructions[k];
      const std::string where = n.file.empty() ? "no line info" : SourceLineText(n.file, n.line);
      if (!n.sass.empty()) {  // one per line: SASS is long
        p("    %s+0x%04x %-44s %5.1f%%  %s, %s %.0f%%\n",
          k ? "               " : "instructions:  ", n.pc_offset,
          Cut(Printable(n.sass), 44).c_str(), n.share, where.c_str(),
          Printable(model::ShortStallName(n.top_stall)).c_str(), n.top_stall_share);
        continue;
      }
      text += StrFormat("%s+0x%x %.1f%% (%s, %s %.0f%%)", k ? ", " : "", n.pc_offset, n.share,
                        where.c_str(), Printable(model::ShortStallName(n.top_stall)).c_str(),
                        n.top_stall_share);
    }
    if (!text.empty()) p("    instructions:  %s\n", text.c_str());
    if (f.sites.empty()) continue;
    text.clear();
    for (size_t k = 0; k < f.sites.size() && k < 3; ++k)
      text += StrFormat("%s%s %.1f%%", k ? ", " : "", Cut(f.sites[k].site, 60).c_str(),
                        f.sites[k].share);
    if (f.sites.size() > 3) text += StrFormat(", %zu more", f.sites.size() - 3);
    if (f.sites.size() > 1 && f.samples)
      text += StrFormat(" (%.0f%% joined by time, the rest by GPU time)",
                        Percent(f.by_window, f.samples));
    p("    launched from: %s\n", text.c_str());
  }
  if (s.functions.size() > shown)
    p("  ... %zu more sampled functions (use --top N)\n", s.functions.size() - shown);
}

}  // namespace

void WriteTextReport(const AnalysisReport& r, const AnalyzeOptions& o, std::ostream& out) {
  Printer p(out);
  const uint64_t wall = r.wall_ns();
  p("Trace:    %s\n", r.source.c_str());
  const char* first = r.active.kernels ? "first kernel" : "first GPU operation";
  std::string how;
  if (!r.window_note.empty())
    how = ": " + r.window_note;
  else if (r.warmup_apart())
    how = StrFormat(
        ": the steady state, from step %u (--with-warmup: from the %s; --whole: all "
        "of it)",
        r.steps.first_number + r.steps.warmup, first);
  else if (r.active.applied)
    how = StrFormat(": %s to last GPU operation (--whole: all of it)",
                    r.active.kernels ? "first kernel" : "first");
  p("Window:   +%s .. +%s (%s), %llu events%s\n", D(r.window_begin - r.trace_begin).c_str(),
    D(r.window_end - r.trace_begin).c_str(), D(wall).c_str(), U(r.events), how.c_str());
  if (r.active.applied) {
    auto outside = [&](const char* label, const CompactTrace::OutsideSpan& s,
                       const std::vector<std::string>& names, const std::string& what = "") {
      if (!s.ns()) return;
      p("%-10s+%s .. +%s (%s)%s", label, D(s.begin - r.trace_begin).c_str(),
        D(s.end - r.trace_begin).c_str(), D(s.ns()).c_str(), what.c_str());
      for (size_t i = 0; i < s.longest_calls.size() && i < names.size(); ++i)
        p("%s%s %s", i ? ", " : "; longest calls: ", Printable(names[i]).c_str(),
          D(s.longest_calls[i].ns).c_str());
      p("\n");
    };
    outside("Start-up:", r.active.startup, r.startup_call_names);
    if (r.warmup_apart()) {
      outside("Warm-up:", r.active.warmup, r.warmup_call_names,
              StrFormat(": %s, %.1f%% of the run from the %s", WarmupStepsText(r.steps).c_str(),
                        r.warmup_share(), first));
    }
    outside("Teardown:", r.active.teardown, r.teardown_call_names);
  }
  if (r.compact.clocks_aligned)
    p("Clocks:   processes aligned to CLOCK_REALTIME via clock anchors\n");

  p("\nFindings\n");
  if (r.findings.empty()) p("  (none)\n");
  for (size_t i = 0; i < r.findings.size(); ++i) p("  %zu. %s\n", i + 1, r.findings[i].c_str());

  if (!r.steps.steps.empty()) {
    const StepReport& st = r.steps;
    if (st.first_number > 1 || !r.window_note.empty())
      p("\nSteps %u-%zu (chosen, from the %s", st.first_number,
        st.first_number + st.steps.size() - 1, st.method.c_str());
    else
      p("\nSteps (%zu, from the %s", st.steps.size(), st.method.c_str());
    if (st.period) {
      std::string anchor = Printable(st.anchor);
      if (anchor.size() > 60) anchor = anchor.substr(0, 57) + "...";
      p(": every %u kernels, at %s", st.period, anchor.c_str());
    }
    p("): median %s, spread (CV) %.1f%%\n", D(st.median_ns).c_str(), 100 * st.cv);
    p("  %5s %14s %12s %12s %6s %8s\n", "STEP", "START", "TIME", "GPU BUSY", "BUSY", "KERNELS");
    const size_t shown = std::min(st.steps.size(), o.top);
    size_t printed = 0;
    for (size_t i = 0; i < st.steps.size(); ++i) {
      const bool outlier =
          std::find(st.outliers.begin(), st.outliers.end(), uint32_t(i)) != st.outliers.end();
      if (i >= shown && !outlier) continue;
      ++printed;
      const Step& s = st.steps[i];
      p("  %5zu %14s %12s %12s %5.1f%% %8u%s\n", i + st.first_number,
        ("+" + D(s.begin_ns - r.trace_begin)).c_str(), D(s.ns()).c_str(), D(s.gpu_busy_ns).c_str(),
        Percent(s.gpu_busy_ns, s.ns()), s.kernels,
        i < st.warmup ? "  outlier, warm-up (not in the window)"
        : outlier     ? "  outlier"
                      : "");
    }
    if (st.steps.size() > printed) p("  ... %zu more (use --top N)\n", st.steps.size() - printed);
  }

  p("\nGPU utilization\n");
  p("  %-22s %8s %12s %8s %10s %10s %10s %10s\n", "DEVICE", "OPS", "BUSY", "UTIL", "AVG CONC",
    "MAX CONC", "K+C OVLP", "IDLE");
  for (const DeviceTimeline& d : r.timeline.devices)
    p("  %-22s %8llu %12s %7.1f%% %10.2f %10u %10s %10s\n",
      StrFormat("GPU %u (%u streams)", d.device, d.streams).c_str(), U(d.ops), D(d.busy_ns).c_str(),
      Percent(d.busy_ns, wall), d.avg_concurrency, d.max_concurrency,
      D(d.kernel_copy_overlap_ns).c_str(), D(d.idle.total_ns()).c_str());
  p("  %-22s %8s %12s %8s %10s %10s %10s %10s %10s\n", "STREAM", "OPS", "BUSY", "UTIL", "RUNNING",
    "PENDING", "WAITING", "IDLE", "FINISHED");
  for (size_t i = 0; i < r.timeline.streams.size(); ++i) {
    const StreamTimeline& s = r.timeline.streams[i];
    p("  %-22s %8llu %12s %7.1f%% %10s %10s %10s %10s %10s\n", r.stream_names[i].c_str(),
      U(s.kernels + s.memcpys + s.memsets), D(s.busy_ns).c_str(), Percent(s.busy_ns, wall),
      D(s.state_ns[int(StreamState::kRunning)]).c_str(),
      D(s.state_ns[int(StreamState::kDispatchPending)]).c_str(),
      D(s.state_ns[int(StreamState::kWaiting)]).c_str(),
      D(s.state_ns[int(StreamState::kIdle)]).c_str(),
      D(s.state_ns[int(StreamState::kFinished)]).c_str());
  }

  p("\nIdle time by cause (device level)\n");
  p("  %-8s", "DEVICE");
  for (int c = 0; c < kNumIdleCauses; ++c) p(" %16s", IdleCauseName(IdleCause(c)));
  p("\n");
  for (const DeviceTimeline& d : r.timeline.devices) {
    p("  %-8s", StrFormat("GPU %u", d.device).c_str());
    for (int c = 0; c < kNumIdleCauses; ++c)
      p(" %9s %5.1f%%", D(d.idle.ns[c]).c_str(), Percent(d.idle.ns[c], wall));
    p("\n");
  }

  if (!r.kernel_timeouts.empty()) KernelTimeouts(p, r.kernel_timeouts);
  StatsTable(p, "Top kernels by total GPU time", r.kernels, o.top);
  if (!r.gpu_samples.functions.empty()) SampledKernels(p, r.gpu_samples, o.sampled_kernels);
  if (!r.sass_counts.empty()) CountedKernels(p, r.sass_counts, o.sampled_kernels);
  if (!r.gpu_metrics.empty()) GpuMetricsSection(p, r.gpu_metrics, o.top);
  if (!r.app_counters.empty())
    AppCountersSection(p, r.app_counters, r.steps, std::max<size_t>(o.top, 30));
  if (!r.call_sites.empty()) {
    StatsTable(p, "Kernel GPU time by launch call site", r.call_sites, o.top, true);
    // Said once, here: unnamed frames hide the code (and the autograd node) behind launches.
    if (r.unnamed_call_site_share >= kUnnamedCallSiteHintShare)
      p("  call sites: %.1f%% of GPU time under unnamed native frames (module+offset) -- run "
        "`tracesmith symbolize %s` to name them (--search-dir DIR when their libraries are "
        "elsewhere)\n",
        r.unnamed_call_site_share, r.source.c_str());
  }
  if (!r.nvtx.empty()) {
    p("\nKernel GPU time by NVTX range (kernels launched inside each range)\n");
    p("  %8s %8s %12s %8s %12s  %s\n", "SHARE", "RANGES", "RANGE TIME", "KERNELS", "GPU TIME",
      "NAME");
    for (size_t i = 0; i < r.nvtx.size() && i < o.top; ++i) {
      const NvtxStats& s = r.nvtx[i];
      p("  %7.1f%% %8llu %12s %8llu %12s  %s\n", s.share, U(s.ranges), D(s.range_ns).c_str(),
        U(s.kernels), D(s.kernel_ns).c_str(), Cut(s.name, 60).c_str());
    }
  }
  if (!r.copies.empty()) {
    p("\nMemory copies and sets\n");
    p("  %-10s %8s %12s %12s %10s\n", "DIRECTION", "COUNT", "BYTES", "TIME", "GB/s");
    for (const CopyStats& c : r.copies)
      p("  %-10s %8llu %12s %12s %10.2f\n", c.direction.c_str(), U(c.count),
        HumanBytes(c.bytes).c_str(), D(c.busy_ns).c_str(), c.gbps());
  }
  if (!r.launches.empty()) {
    p("\nLaunch statistics (API calls that issued GPU work; delay = op start - call start)\n");
    p("  %-28s %8s %10s %10s %10s %10s %10s %10s %9s\n", "API", "COUNT", "API P50", "API P95",
      "API MAX", "DELAY P50", "DELAY P95", "DELAY MAX", "OUTLIERS");
    for (const LaunchStats& l : r.launches)
      p("  %-28s %8llu %10s %10s %10s %10s %10s %10s %9llu\n", Cut(l.api, 28).c_str(),
        U(l.api_duration.count), D(l.api_duration.p50_ns).c_str(), D(l.api_duration.p95_ns).c_str(),
        D(l.api_duration.max_ns).c_str(), D(l.launch_delay.p50_ns).c_str(),
        D(l.launch_delay.p95_ns).c_str(), D(l.launch_delay.max_ns).c_str(), U(l.outliers));
    for (const LaunchOutlier& x : r.outliers)
      p("    slow: %s at +%s took %s (op started %s after the call) -> %s%s%s\n", x.api.c_str(),
        D(x.start_ns).c_str(), D(x.api_ns).c_str(), D(x.delay_ns).c_str(), Cut(x.op, 60).c_str(),
        x.call_site.empty() ? "" : " from ", x.call_site.c_str());
  }
  bool nccl = false;
  for (const DeviceTimeline& d : r.timeline.devices) nccl |= d.nccl_ns > 0;
  if (nccl) {
    p("\nCommunication (NCCL kernels) vs computation\n");
    p("  %-8s %12s %12s %12s %10s\n", "DEVICE", "NCCL", "COMPUTE", "OVERLAP", "HIDDEN");
    for (const DeviceTimeline& d : r.timeline.devices)
      p("  %-8s %12s %12s %12s %9.1f%%\n", StrFormat("GPU %u", d.device).c_str(),
        D(d.nccl_ns).c_str(), D(d.compute_ns).c_str(), D(d.nccl_compute_overlap_ns).c_str(),
        Percent(d.nccl_compute_overlap_ns, d.nccl_ns));
  }
  if (!r.graphs.empty()) {
    p("\nCUDA graphs (%llu launches)\n", U(r.graph_launches));
    p("  %10s %10s %10s %12s\n", "GRAPH", "LAUNCHES", "KERNELS", "GPU TIME");
    for (const GraphStats& g : r.graphs)
      p("  %10u %10llu %10llu %12s\n", g.graph_id, U(g.launches), U(g.kernels),
        D(g.kernel_ns).c_str());
  }
  p("\nCritical path (%llu steps; shares of the window)\n", U(r.critical_path_nodes));
  for (int c = 0; c < kNumPathCategories; ++c)
    if (r.critical_path_ns[c])
      p("  %-14s %12s %6.1f%%\n", PathCategoryName(PathCategory(c)),
        D(r.critical_path_ns[c]).c_str(), Percent(r.critical_path_ns[c], wall));
  for (const PathShare& s : r.critical_path_top)
    p("    %12s %6.1f%%  %s\n", D(s.ns).c_str(), Percent(s.ns, wall), Cut(s.name, 80).c_str());
  const CompactStats& cs = r.compact;
  if (cs.inverted_intervals || cs.lanes_resorted || cs.processes_unaligned)
    p("\nData notes: %llu events ended before they started (clamped), %llu streams needed a full "
      "re-sort, %llu processes without clock anchors\n",
      U(cs.inverted_intervals), U(cs.lanes_resorted), U(cs.processes_unaligned));
}

}  // namespace tracesmith::analysis
