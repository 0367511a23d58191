// Builds the report page: the analysis (as `analyze` computes it), the memory
// report (as `memory` does), the flame tree and the timeline bins, embedded
// as JSON blocks in one HTML file with the page's own style and script.
#include "tracesmith/report/html_report.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "page_assets.h"
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/process_rank.h"
#include "tracesmith/report/timeline_bins.h"

namespace tracesmith::report {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kPhases = 4;

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The capture's loss counters (a drop, an overflowing ring, a refused
// buffer): what the header says about data the trace is missing.
bool IsLossCounter(std::string_view name) {
  return name.find("drop") != std::string_view::npos ||
         name.find("overflow") != std::string_view::npos ||
         name.find("refused") != std::string_view::npos;
}

// `trace_ns`: the whole trace's time range (every event kind, as `info`
// says it), not only the analysed window.
Json MetaJson(const analysis::CompactTrace& t, const analysis::AnalysisReport& r,
              uint64_t trace_ns) {
  const model::Trace& meta = t.meta();
  Json processes = Json::array(), devices = Json::array(), costs = Json::array(),
       stats = Json::array();
  for (const model::Process& p : meta.Rows<model::Process>()) {
    Json j{{"pid", p.pid},
           {"name", std::string(meta.strings.Get(p.name_id))},
           {"cmdline", std::string(meta.strings.Get(p.cmdline_id))},
           {"hostname", std::string(meta.strings.Get(p.hostname_id))},
           {"rank", nullptr}};
    if (auto rank = model::KnownRank(p)) j["rank"] = *rank;
    processes.push_back(std::move(j));
  }
  std::set<std::pair<uint32_t, uint32_t>> seen;  // a device per process, once
  for (const model::Device& d : meta.Rows<model::Device>()) {
    if (!seen.insert({d.pid, d.device_id}).second) continue;
    devices.push_back({{"pid", d.pid},
                       {"device", d.device_id},
                       {"name", std::string(meta.strings.Get(d.name_id))},
                       {"sm_count", d.sm_count},
                       {"memory_bytes", d.memory_bytes}});
  }
  // Per launch of the whole trace, as `info` says it (not of the analysed window).
  for (const analysis::CaptureCost& c : analysis::ComputeCaptureCost(meta, t.kernels_per_pid()))
    costs.push_back({{"pid", c.pid}, {"line", analysis::CaptureCostLine(c)}});
  for (const model::Stat& s : meta.Rows<model::Stat>()) {
    const std::string name(meta.strings.Get(s.name_id));
    if (IsLossCounter(name)) stats.push_back({{"pid", s.pid}, {"name", name}, {"value", s.value}});
  }
  const uint64_t duration = trace_ns           ? trace_ns
                            : r.active.applied ? r.active.trace_ns()
                                               : r.wall_ns();
  return Json{{"processes", processes},
              {"devices", devices},
              {"duration_ns", duration},
              {"capture_cost", costs},
              {"stats", stats}};
}

Json TimelineJson(const TimelineBins& bins) {
  Json lanes = Json::array();
  for (const LaneBins& l : bins.lanes)
    lanes.push_back({{"group", l.group},
                     {"name", l.name},
                     {"pid", l.pid},
                     {"device", l.device},
                     {"stream", l.stream},
                     {"busy_ns", l.busy_ns},
                     {"ops", l.ops},
                     {"busy", l.busy_permille}});
  // The program's counters and the GPU metrics: null where a bin has no value.
  auto values = [](const std::vector<double>& v) {
    Json a = Json::array();
    for (double x : v) a.push_back(std::isfinite(x) ? Json(x) : Json(nullptr));
    return a;
  };
  auto series = [&](const CounterBins& c) {
    return Json{{"name", c.name}, {"pid", c.pid},       {"values", c.values}, {"min", c.min},
                {"max", c.max},   {"lo", values(c.lo)}, {"hi", values(c.hi)}};
  };
  Json counters = Json::array(), metrics = Json::array();
  for (const CounterBins& c : bins.counters) counters.push_back(series(c));
  for (const GpuMetricBins& m : bins.gpu_metrics) {
    Json j = series(m);
    j["device"] = m.device;
    j["metric"] = m.metric;
    j["unit"] = m.unit;
    j["mean"] = values(m.mean);
    metrics.push_back(std::move(j));
  }
  return Json{{"begin_ns", bins.begin_ns}, {"end_ns", bins.end_ns},
              {"bins", bins.bins},         {"lanes", lanes},
              {"counters", counters},      {"counters_omitted", bins.counters_omitted},
              {"gpu_metrics", metrics},    {"gpu_metrics_omitted", bins.gpu_metrics_omitted}};
}

// [name index, value, [children...]]: the smallest shape the script walks.
Json NodeJson(const FlameNode& n) {
  Json children = Json::array();
  for (const FlameNode& c : n.children) children.push_back(NodeJson(c));
  return Json::array({n.name, n.value, std::move(children)});
}

void Progress(const HtmlReportOptions& o, int step, std::string_view what) {
  if (o.progress) o.progress(step, kPhases, what);
}

}  // namespace

std::string EscapeJsonForScript(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";  // "<" occurs only inside strings, where the escape reads back as "<"
    } else {
      out += c;
    }
  }
  return out;
}

StatusOr<std::string> BuildHtmlReport(const std::string& path, const std::string& source,
                                      const HtmlReportOptions& o, HtmlReportSummary* summary,
                                      format::ReadReport* damage) {
  RETURN_IF_ERROR(analysis::ValidateCallSiteRules(o.sites));
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> input, format::OpenFileSource(path));
  return BuildHtmlReport(*input, source, o, summary, damage);
}

StatusOr<std::string> BuildHtmlReport(format::TraceSource& input, const std::string& source,
                                      const HtmlReportOptions& o, HtmlReportSummary* summary,
                                      format::ReadReport* damage) {
  RETURN_IF_ERROR(analysis::ValidateCallSiteRules(o.sites));
  Progress(o, 1, "reading the trace");
  analysis::CompactTrace trace;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(input, o.load, &trace, damage));
  // A trace of several processes of a job: the cross-rank report too, as
  // `analyze --json` has it ("ranks"), read from the (merged) file.
  const std::vector<std::string> files = o.run_files.empty() ? input.files() : o.run_files;
  // The memory model reads the trace's file again, on its own thread, while the analysis
  // reads the compact trace (the two share nothing).
  Progress(o, 2, "analysing the trace and building the memory model");
  analysis::MemoryReport memory;
  Status memory_status;
  std::thread memory_thread([&] {
    memory_status = analysis::BuildMemoryReport(input, analysis::MemoryReportOptions{}, &memory);
  });
  analysis::AnalysisReport report = analysis::BuildReport(trace, source, o.sites);
  if (!o.load.steps.empty()) report.window_note = "steps " + o.load.steps + " of the Steps table";
  const std::optional<analysis::JobReport> job = analysis::JobReportOf(trace, files, {});
  memory_thread.join();
  RETURN_IF_ERROR(memory_status);
  std::ostringstream analysis_json;
  analysis::WriteJsonReport(report, analysis_json, job ? &*job : nullptr);

  std::ostringstream memory_json;
  Json owner_series = Json::array();
  if (!memory.keys.empty()) {
    analysis::WriteMemoryJson(memory, memory_json);
    // The owners' series on the memory report's bins (8 owners a chart at most).
    for (const analysis::MemoryKeyReport& k : memory.keys) {
      Json owners = Json::array();
      for (size_t i = 0; i < k.owners.size() && i < 8; ++i)
        owners.push_back({{"owner", k.owners[i].owner},
                          {"peak_bytes", k.owners[i].peak_bytes},
                          {"bins", k.owners[i].bins}});
      owner_series.push_back({{"pid", k.key.pid},
                              {"device_id", k.key.device_id},
                              {"space", analysis::MemorySpaceName(k.key.space)},
                              {"owners", owners}});
    }
  }

  Progress(o, 3, "folding stacks and binning the timeline");
  const FoldedStacks folded = FoldStacks(trace, o.flame_weight);
  const FlameTree tree =
      BuildFlameTree(folded, uint64_t(double(folded.total) * o.flame_min_share), o.flame_max_nodes);
  const TimelineBins bins = ComputeTimelineBins(trace, o.timeline_bins);
  Json page{{"format", "tracesmith-report-1"},
            {"meta", MetaJson(trace, report, memory.duration_ns)},
            {"timeline", TimelineJson(bins)},
            {"memory_owners", owner_series},
            {"flame",
             {{"weight", FlameWeightName(folded.weight)},
              {"total", folded.total},
              {"ops", folded.ops},
              {"ops_without_stack", folded.ops_without_stack},
              {"stacks", folded.lines.size()},
              {"pruned", tree.pruned_nodes},
              {"names", tree.names},
              {"tree", NodeJson(tree.root)}}}};

  Progress(o, 4, "writing the page");
  const std::string title = HtmlEscape("TraceSmith report: " + source);
  std::string html;
  html.reserve(analysis_json.str().size() + memory_json.str().size() + (1 << 20));
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<meta name=\"generator\" content=\"tracesmith report\">\n<title>" + title + "</title>\n";
  html += std::string("<style>") + kPageStyle + "</style>\n</head>\n<body>\n";
  html += "<header class=\"top\" id=\"ts-header\"><h1>" + title + "</h1></header>\n";
  html +=
      "<nav><a href=\"#findings\">Findings</a><a href=\"#timeline\">Timeline</a>"
      "<a href=\"#kernels\">Top kernels</a><a href=\"#callsites\">Call sites</a>"
      "<a href=\"#utilization\">Utilization</a><a href=\"#steps\">Steps</a>"
      "<a href=\"#memory\">Memory</a><a href=\"#copies\">Copies</a>"
      "<a href=\"#flame\">Flame graph</a></nav>\n<main>\n";
  const std::string perfetto_hint =
      "For every op, open the full trace in Perfetto UI (ui.perfetto.dev): <code>tracesmith "
      "export -f perfetto " +
      HtmlEscape(o.input_names.empty() ? source : o.input_names) +
      "</code> writes the .pftrace to open there.";
  struct Section {
    const char *id, *title, *intro;
  };
  const Section sections[] = {
      {"findings", "Findings", ""},
      {"timeline", "Timeline overview", ""},
      {"kernels", "Top kernels by GPU time", ""},
      {"callsites", "Kernel GPU time by launch call site",
       "The code that launched each kernel: the innermost Python line, the autograd node on the "
       "backward thread, else the innermost native frame outside the CUDA runtime."},
      {"utilization", "Utilization and idle causes", ""},
      {"steps", "Steps", ""},
      {"memory", "GPU memory over time", ""},
      {"copies", "Copy bandwidth by direction", ""},
      {"flame", "GPU-time flame graph", ""},
  };
  for (const Section& s : sections) {
    html += StrFormat("<section id=\"%s\"><h2>%s</h2>\n", s.id, s.title);
    if (*s.intro) html += StrFormat("<p class=\"note\">%s</p>\n", s.intro);
    if (std::string_view(s.id) == "timeline") {
      html +=
          "<div class=\"controls\"><button id=\"timeline-reset\">reset zoom</button>"
          "<span class=\"note\" id=\"timeline-range\"></span></div>\n"
          "<p class=\"note\">Busy fraction of each stream per time bin (drag to zoom into a "
          "range, wheel to zoom, double-click to reset; red lines: step starts); under the "
          "streams " +
          std::string(bins.gpu_metrics.empty() ? ""
                                               : "the GPU metrics (profile --gpu-metrics) and ") +
          "the program's own counters (tracesmith.counter), zoomed with them. " + perfetto_hint +
          "</p>\n<canvas id=\"timeline-canvas\"></canvas>\n";
    } else if (std::string_view(s.id) == "flame") {
      html +=
          "<div class=\"controls\"><input type=\"search\" id=\"flame-search\" "
          "placeholder=\"search frames (regex)\"><button id=\"flame-reset\">reset zoom</button>"
          "<span class=\"note\" id=\"flame-match\"></span></div>\n"
          "<p class=\"note\" id=\"flame-note\"></p>\n<canvas id=\"flame-canvas\"></canvas>\n";
    } else {
      html += StrFormat("<div class=\"chart\" id=\"%s-body\"></div>\n", s.id);
    }
    html += "</section>\n";
  }
  html += "</main>\n<div id=\"ts-tip\"></div>\n";
  html +=
      "<noscript><p>This report draws its charts with JavaScript; the numbers are in the "
      "JSON blocks of this file (tracesmith analyze --json gives the same).</p></noscript>\n";
  html += "<script type=\"application/json\" id=\"ts-analysis\">" +
          EscapeJsonForScript(analysis_json.str()) + "</script>\n";
  html += "<script type=\"application/json\" id=\"ts-memory\">" +
          EscapeJsonForScript(memory_json.str()) + "</script>\n";
  html += "<script type=\"application/json\" id=\"ts-page\">" + EscapeJsonForScript(page.dump()) +
          "</script>\n";
  html += std::string("<script>") + kPageScriptBase + kPageScriptViews + "</script>\n";
  html += "</body>\n</html>\n";

  if (summary) {
    summary->bytes = html.size();
    summary->events = report.events;
    summary->kernels = report.kernel_count;
    summary->lanes = bins.lanes.size();
    summary->bins = bins.bins;
    summary->steps = report.steps.steps.size();
    summary->findings = report.findings.size();
    summary->flame_stacks = folded.lines.size();
    summary->flame_nodes = tree.nodes;
    summary->memory_series = memory.keys.size();
  }
  return html;
}

StatusOr<HtmlReportSummary> WriteHtmlReport(const std::string& path, const std::string& source,
                                            const std::string& out_path,
                                            const HtmlReportOptions& options,
                                            format::ReadReport* damage) {
  const std::string inputs[] = {path};
  RETURN_IF_ERROR(CheckOutputPath(out_path, inputs));
  RETURN_IF_ERROR(analysis::ValidateCallSiteRules(options.sites));
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> input, format::OpenFileSource(path));
  return WriteHtmlReport(*input, source, out_path, options, damage);
}

StatusOr<HtmlReportSummary> WriteHtmlReport(format::TraceSource& input, const std::string& source,
                                            const std::string& out_path,
                                            const HtmlReportOptions& options,
                                            format::ReadReport* damage) {
  const std::vector<std::string> inputs = input.files();
  RETURN_IF_ERROR(CheckOutputPath(out_path, inputs));
  HtmlReportSummary summary;
  ASSIGN_OR_RETURN(std::string html, BuildHtmlReport(input, source, options, &summary, damage));
  RETURN_IF_ERROR(WriteFileAtomically(out_path, inputs, [&](std::ostream& file) {
                    file.write(html.data(), std::streamsize(html.size()));
                    return OkStatus();
                  }).status());
  return summary;
}

}  // namespace tracesmith::report
