// tracesmith._core: the C++ libraries behind the Python package (python/tracesmith).
//
// Traces are read into NumPy columns by read_columns.cc (tracesmith.load). Everything
// else calls the same library functions the CLI calls. Errors raise tracesmith.TraceError
// with the Status message (file, byte offset): python_errors.h.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "python_errors.h"
#include "read_columns.h"
#include "tracesmith/analysis/diff.h"
#include "tracesmith/analysis/event_filter.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/cluster/job_files.h"
#include "tracesmith/cluster/merge.h"
#include "tracesmith/cluster/run_source.h"
#include "tracesmith/export/export.h"
#include "tracesmith/export/job_export.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/import/import.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/enum_fields.h"
#include "tracesmith/model/records.h"
#include "tracesmith/model/trace.h"
#include "tracesmith/session/run_command.h"
#include "write_tables.h"

#ifndef TS_VERSION
#define TS_VERSION "dev"
#endif

namespace py = pybind11;

namespace tracesmith::python {
namespace {

// A run of several files read as one trace merged on the fly (cluster::RunSource: no
// temporary file), opened by open_run and handed to the functions below in place of a path.
struct OpenRun {
  std::unique_ptr<cluster::RunSource> source;
};

// What the functions read: a file's `path`, or an open_run run's source (`source`).
struct TraceArg {
  std::string path;
  cluster::RunSource* source = nullptr;
};
TraceArg TraceArgOf(const py::handle& trace) {
  TraceArg arg;
  if (py::isinstance<OpenRun>(trace))
    arg.source = trace.cast<OpenRun&>().source.get();
  else
    arg.path = trace.cast<std::string>();
  return arg;
}

// (report JSON as bytes: its strings are the trace's, not validated UTF-8;
// damage text, empty when the file is clean)
// `files`: the run's per-process traces when `path` merges several (the
// cross-rank report is added as "ranks" when the trace holds a job).
py::tuple AnalyzeJson(const py::handle& trace_arg, const std::string& from, const std::string& to,
                      const std::string& steps, bool whole, bool strict,
                      const std::vector<std::string>& files, bool with_warmup) {
  analysis::LoadOptions load;
  load.active_region = true;
  load.steady_state = !with_warmup;
  load.from = from;
  load.to = to;
  load.steps = steps;
  load.whole = whole;
  const TraceArg arg = TraceArgOf(trace_arg);
  const std::string& path = arg.path;
  analysis::CompactTrace trace;
  format::ReadReport damage;
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    st = arg.source ? analysis::LoadCompactTrace(*arg.source, load, &trace, &damage)
                    : analysis::LoadCompactTrace(path, load, &trace, &damage);
    if (st.ok() && strict && !damage.clean()) st = damage.DamageStatus(path);
    if (st.ok()) {
      analysis::AnalysisReport report = analysis::BuildReport(trace, path, {});
      if (!steps.empty()) report.window_note = "steps " + steps + " of the Steps table";
      const std::vector<std::string> run = !files.empty() ? files
                                           : arg.source   ? arg.source->files()
                                                          : std::vector<std::string>{path};
      const auto job = analysis::JobReportOf(trace, run, {});
      analysis::WriteJsonReport(report, json, job ? &*job : nullptr);
    }
  }
  if (!st.ok()) Raise(st);
  return py::make_tuple(py::bytes(json.str()), DamageText(path, damage));
}

// `tracesmith memory --json` (analysis::BuildMemoryReport, the CLI's function).
py::tuple MemoryJson(const py::handle& trace_arg, const std::string& at, size_t top, bool strict) {
  const TraceArg arg = TraceArgOf(trace_arg);
  const std::string& path = arg.path;
  analysis::MemoryReportOptions o;
  o.at = at;
  o.top = top;
  analysis::MemoryReport report;
  format::ReadReport damage;
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    st = arg.source ? analysis::BuildMemoryReport(*arg.source, o, &report, &damage)
                    : analysis::BuildMemoryReport(path, o, &report, &damage);
    if (st.ok() && strict && !damage.clean()) st = damage.DamageStatus(path);
    if (st.ok()) analysis::WriteMemoryJson(report, json);
  }
  if (!st.ok()) Raise(st);
  return py::make_tuple(py::bytes(json.str()), DamageText(path, damage));
}

// `tracesmith view --stats`: counts per kind and per (kind, name), streamed
// (analysis::StreamEventStats, the CLI's function).
py::dict EventStats(const py::handle& trace_arg, const std::vector<std::string>& kinds,
                    const std::string& name, int64_t stream, int64_t device,
                    const std::string& from, const std::string& to, bool strict) {
  analysis::EventFilterSpec spec{kinds, name, stream, device, from, to};
  auto filter = Check(analysis::EventFilter::Make(spec));
  const TraceArg arg = TraceArgOf(trace_arg);
  const std::string& path = arg.path;
  std::unique_ptr<format::TraceSource> file;
  if (!arg.source) file = Check(format::OpenFileSource(path));
  format::TraceSource& source = arg.source ? *arg.source : *file;
  StatusOr<analysis::EventStats> stats = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    stats = analysis::StreamEventStats(source, std::move(filter));
  }
  if (!stats.ok()) {
    const Status& st = stats.status();
    Raise(st.code() == StatusCode::kInvalidArgument || path.empty()
              ? st
              : Status(st.code(), path + ": " + st.message()));
  }
  const format::ReadReport report = source.report();
  if (strict && !report.clean()) Raise(report.DamageStatus(path));
  py::dict out, per_kind;
  for (const auto& [kind, n] : stats->per_kind) per_kind[py::str(kind)] = n;
  py::list per_name;
  for (const analysis::NameStats& a : stats->per_name) {
    py::dict row;
    row["kind"] = a.kind;
    row["name"] = py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(a.name.data(), py::ssize_t(a.name.size()), "replace"));
    row["count"] = a.count;
    row["timed"] = a.timed;
    row["total_ns"] = a.total_ns;
    row["mean_ns"] = a.mean_ns();
    row["min_ns"] = a.timed ? py::object(py::int_(a.min_ns)) : py::object(py::none());
    row["max_ns"] = a.timed ? py::object(py::int_(a.max_ns)) : py::object(py::none());
    per_name.append(row);
  }
  out["matched"] = stats->matched;
  out["per_kind"] = per_kind;
  out["per_name"] = per_name;
  out["damage_text"] =
      report.clean() ? std::string() : report.Headline(path) + ":\n" + report.Describe();
  return out;
}

// `tracesmith profile -- COMMAND` without the printing: session::RunUnderCapture
// with options given as the injection library's environment variables.
py::dict RunCommand(const std::vector<std::string>& command,
                    const std::map<std::string, std::string>& options, const std::string& inject) {
  session::RunOptions run;
  run.command = command;
  run.capture = Check(capture::OptionsFromEnv(options));
  run.inject_library = inject;
  StatusOr<session::RunResult> r = InvalidArgument("not run");
  {
    py::gil_scoped_release release;  // the command may run for hours
    r = session::RunUnderCapture(run);
  }
  if (!r.ok()) Raise(r.status());
  py::dict out;
  out["exit_code"] = r->exit_code;
  out["signal"] = r->term_signal;
  out["seconds"] = r->seconds;
  out["output"] = r->output;
  out["files"] = r->files;
  out["kept_previous"] = r->kept_previous;
  out["previous_trace_error"] = r->previous_trace.ok() ? "" : r->previous_trace.message();
  return out;
}

// `tracesmith diff --json A B`: the JSON (bytes), as the CLI writes it.
py::bytes DiffJson(const py::handle& a_arg, const py::handle& b_arg, const std::string& nvtx,
                   bool strict) {
  analysis::LoadOptions load;
  load.nvtx = nvtx;
  const TraceArg a = TraceArgOf(a_arg), b = TraceArgOf(b_arg);
  std::unique_ptr<format::TraceSource> file_a, file_b;
  if (a.source || b.source) {  // a run read on the fly on either side
    if (!a.source) file_a = Check(format::OpenFileSource(a.path));
    if (!b.source) file_b = Check(format::OpenFileSource(b.path));
  }
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    auto d = file_a || file_b || (a.source && b.source)
                 ? analysis::DiffTraceSources(a.source ? *a.source : *file_a,
                                              b.source ? *b.source : *file_b, load, strict)
                 : analysis::DiffTraceFiles(a.path, b.path, load, strict);
    if (d.ok()) analysis::WriteJsonDiff(*d, json);
    st = d.status();
  }
  if (!st.ok()) Raise(st);
  return py::bytes(json.str());
}

py::dict Export(const py::handle& trace_arg, const std::string& out, const std::string& format,
                bool gzip, bool strict, size_t node_limit, const std::string& from,
                const std::string& to) {
  auto fmt = Check(exporter::ParseExportFormat(format));
  exporter::ExportOptions options;
  options.gzip = gzip;
  options.refuse_damaged_input = strict;
  options.dot_node_limit = node_limit;
  options.from = from;
  options.to = to;
  const TraceArg arg = TraceArgOf(trace_arg);
  const std::string& path = arg.path;
  format::ReadReport damage;
  StatusOr<exporter::ExportStats> stats = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    stats = arg.source ? exporter::ExportSource(*arg.source, fmt, out, options, &damage)
                       : exporter::ExportSbtFile(path, fmt, out, options, &damage);
  }
  if (!stats.ok()) Raise(stats.status());
  py::dict d;
  d["path"] = out;
  d["format"] = exporter::ExportFormatName(fmt);
  d["events"] = stats->events;
  d["bytes"] = stats->bytes;
  d["flows"] = stats->flows;
  d["damage_text"] = DamageText(path, damage);
  return d;
}

// A run of several processes to Perfetto, as `tracesmith export` writes it (the job's
// export: one process per rank on the job's clock); None when the run is not a job.
py::object ExportJob(const std::vector<std::string>& files, const std::string& out, bool strict) {
  exporter::RunProcessScan scan;
  {
    py::gil_scoped_release release;
    scan = exporter::ScanRunProcesses(files);
  }
  if (!exporter::ExportsAsJob(exporter::ExportFormat::kPerfetto, scan)) return py::none();
  std::string damage;
  for (const auto& [path, report] : scan.damage) {
    if (strict) Raise(report.DamageStatus(path));
    damage += (damage.empty() ? "" : "\n") + DamageText(path, report);
  }
  StatusOr<exporter::JobExportStats> stats = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    stats = exporter::ExportJobPerfetto(files, out);
  }
  if (!stats.ok()) Raise(stats.status());
  py::dict d;
  d["path"] = out;
  d["format"] = "perfetto";
  d["events"] = stats->slices;
  d["bytes"] = stats->bytes;
  d["flows"] = stats->flows;
  d["damage_text"] = damage;
  d["ranks"] = stats->ranks;
  d["warnings"] = stats->warnings;
  d["left_out"] = stats->left_out;
  return d;
}

py::dict Import(const std::string& path, const std::string& out, const std::string& xray_binary,
                bool strict) {
  importer::ImportOptions io;
  io.xray_binary = xray_binary;
  importer::ImportFormat detected;
  importer::ImportStats stats;
  Status st;
  {
    py::gil_scoped_release release;
    auto trace = importer::ImportFile(path, io, &detected, &stats);
    if (!trace.ok()) {
      st = trace.status();
    } else if (strict && !stats.damage.empty()) {
      st = DataLoss(path + ": " + stats.damage);
    } else {
      st = format::WriteTraceFile(*trace, out);
    }
  }
  if (!st.ok()) Raise(st);
  py::dict d;
  d["path"] = out;
  d["format"] = importer::ImportFormatName(detected);
  d["events"] = stats.events;
  d["skipped"] = stats.skipped;
  d["damage_text"] = stats.damage;
  d["warnings"] = stats.warnings;
  return d;
}

// cluster::ResolveRun: {"files": [...], "expanded": [...]}.
py::dict ResolveRun(const std::vector<std::string>& names, bool single) {
  cluster::RunFiles run = Check(cluster::ResolveRun(names, single));
  py::dict d;
  d["files"] = run.files;
  d["expanded"] = run.expanded;
  return d;
}

py::dict MergeDict(const cluster::MergeResult& merged, const std::string& out);

// cluster::MergeTraces, and what it did as a dict (the CLI's summary line
// in "summary", its notes and each input's damage as text).
py::dict Merge(const std::vector<std::string>& inputs, const std::string& out, bool strict,
               bool overwrite, bool in_place) {
  cluster::MergeOptions o;
  o.strict = strict;
  o.overwrite = overwrite;
  o.in_place = in_place;
  StatusOr<cluster::MergeResult> merged = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    merged = cluster::MergeTraces(inputs, out, o);
  }
  if (!merged.ok()) Raise(merged.status());
  return MergeDict(*merged, out);
}

// cluster::RunSource::Open: the run read on the fly by the functions above (given in
// place of a path) and, as `result()`, what its survey found (Merge's dict, "path" "").
OpenRun OpenRunSource(const std::vector<std::string>& files, bool strict) {
  cluster::MergeOptions o;
  o.strict = strict;
  OpenRun run;
  StatusOr<std::unique_ptr<cluster::RunSource>> source = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    source = cluster::RunSource::Open(files, o);
  }
  if (!source.ok()) Raise(source.status());
  run.source = std::move(*source);
  return run;
}

py::dict MergeDict(const cluster::MergeResult& merged, const std::string& out) {
  const cluster::MergeResult* m = &merged;
  py::list ins;
  for (const cluster::MergedInput& in : m->inputs) {
    py::list procs;
    for (const cluster::MergedProcess& p : in.processes) {
      py::dict x;
      x["pid"] = p.pid;
      x["out_pid"] = p.out_pid;
      x["rank"] = p.rank;
      x["host"] = p.host;
      x["name"] = p.name;
      procs.append(x);
    }
    py::dict i;
    i["path"] = in.path;
    i["bytes"] = in.bytes;
    i["events"] = in.events;
    i["events_by_kind"] = in.events_by_kind;
    i["processes"] = procs;
    i["damage_text"] = DamageText(in.path, in.damage);
    i["replay_chunks"] = in.replay_chunks;
    ins.append(i);
  }
  py::dict d;
  d["path"] = out;
  d["inputs"] = ins;
  d["events"] = m->events;
  d["input_bytes"] = m->input_bytes;
  d["output_bytes"] = m->output_bytes;
  d["notes"] = m->notes;
  d["summary"] = m->Describe();
  return d;
}

py::dict Devices() {
  auto info = capture::QueryDevices();
  py::dict d;
  py::list devices;
  if (info.ok()) {
    d["driver_version"] = info->driver_version;
    for (const capture::DeviceInfo& dev : info->devices) {
      py::dict x;
      x["ordinal"] = dev.ordinal;
      x["name"] = dev.name;
      x["uuid"] = dev.uuid;
      x["compute_capability"] = py::make_tuple(dev.cc_major, dev.cc_minor);
      x["sm_count"] = dev.sm_count;
      x["memory_bytes"] = dev.memory_bytes;
      devices.append(x);
    }
  } else {
    d["driver_version"] = 0;
    d["error"] = info.status().message();
  }
  d["devices"] = devices;
  return d;
}

}  // namespace
}  // namespace tracesmith::python

PYBIND11_MODULE(_core, m) {
  using namespace tracesmith::python;
  m.doc() = "TraceSmith's C++ libraries (use the tracesmith package, not this module)";
  // The package's own exception class (python/tracesmith/_errors.py), kept alive here.
  py::object trace_error = py::module_::import("tracesmith._errors").attr("TraceError");
  g_trace_error = trace_error.release().ptr();
  m.attr("TraceError") = py::handle(g_trace_error);
  py::object trace_changed = py::module_::import("tracesmith._errors").attr("TraceChangedError");
  g_trace_changed = trace_changed.release().ptr();
  m.attr("version") = TS_VERSION;
  m.attr("sbt_version") =
      py::make_tuple(tracesmith::format::kMajorVersion, tracesmith::format::kMinorVersion);
  m.def(
      "read_columns",
      [](const py::handle& trace, bool strict, const std::vector<std::string>& kinds, bool lazy,
         const std::string& what) {
        const TraceArg arg = TraceArgOf(trace);
        return arg.source ? ReadRunColumns(*arg.source, what, strict, kinds, lazy)
                          : ReadColumns(arg.path, strict, kinds, lazy);
      },
      py::arg("path"), py::arg("strict") = false, py::arg("kinds") = std::vector<std::string>(),
      py::arg("lazy") = false, py::arg("what") = "",
      "Record kinds' rows of an SBT file (or an open_run run: `what` names it) as {kind: "
      "{field: ndarray}}, plus strings and damage (lazy: metadata and `kinds` only; the other "
      "event kinds are left \"pending\")");
  m.def(
      "read_kinds",
      [](const py::handle& trace, const std::vector<std::string>& kinds, bool strict,
         uint64_t identity, const std::string& what) {
        const TraceArg arg = TraceArgOf(trace);
        return arg.source ? ReadRunKinds(*arg.source, kinds, identity, what)
                          : ReadKinds(arg.path, kinds, strict, identity, what);
      },
      py::arg("path"), py::arg("kinds"), py::arg("strict"), py::arg("identity"),
      py::arg("what") = "",
      "Event kinds left pending by read_columns(lazy=True), in one pass over the same file or "
      "run (TraceChangedError when it is not)");
  py::class_<OpenRun>(m, "OpenRun",
                      "A run of several traces read as one, merged on the fly (open_run)")
      .def(
          "result", [](const OpenRun& r) { return MergeDict(r.source->result(), ""); },
          "What the merge does (merge's dict): after open_run, what the survey found; after a "
          "function read the run, all of it");
  m.def("open_run", &OpenRunSource, py::arg("files"), py::arg("strict") = false,
        "A run of several traces (cluster::RunSource), for read_columns, read_kinds, "
        "analyze_json, memory_json, diff_json, export and event_stats in place of a path");
  m.def("analyze_json", &AnalyzeJson, py::arg("path"), py::arg("start") = "", py::arg("end") = "",
        py::arg("steps") = "", py::arg("whole") = false, py::arg("strict") = false,
        py::arg("files") = std::vector<std::string>{}, py::arg("with_warmup") = false,
        "`tracesmith analyze --json` of an SBT file (`files`: the run's per-process traces when "
        "it merges several; the cross-rank report is then its \"ranks\")");
  m.def("memory_json", &MemoryJson, py::arg("path"), py::arg("at") = "", py::arg("top") = 10,
        py::arg("strict") = false, "`tracesmith memory --json` of an SBT file");
  m.def("diff_json", &DiffJson, py::arg("a"), py::arg("b"), py::arg("nvtx") = "",
        py::arg("strict") = false, "`tracesmith diff --json A B`");
  m.def("export", &Export, py::arg("path"), py::arg("out"), py::arg("format"),
        py::arg("gzip") = false, py::arg("strict") = false, py::arg("node_limit") = 500,
        py::arg("start") = "", py::arg("end") = "", "`tracesmith export`");
  m.def("export_job", &ExportJob, py::arg("files"), py::arg("out"), py::arg("strict") = false,
        "`tracesmith export -f perfetto` of a run of several processes (the job's export); "
        "None when the run holds one process");
  m.def("import_trace", &Import, py::arg("path"), py::arg("out"), py::arg("xray_binary") = "",
        py::arg("strict") = false, "`tracesmith import`");
  m.def("event_stats", &EventStats, py::arg("path"), py::arg("kinds"), py::arg("name"),
        py::arg("stream"), py::arg("device"), py::arg("start"), py::arg("end"),
        py::arg("strict") = false, "`tracesmith view --stats` as a dict");
  m.def("run_command", &RunCommand, py::arg("command"), py::arg("options"), py::arg("inject"),
        "Runs a command under capture (session::RunUnderCapture) and waits for it");
  m.def("devices", &Devices, "CUDA driver version and devices (empty without a driver or GPU)");
  m.def("resolve_run", &ResolveRun, py::arg("names"), py::arg("single") = false,
        "The trace files a run's names stand for (cluster::ResolveRun)");
  m.def("merge", &Merge, py::arg("inputs"), py::arg("out"), py::arg("strict") = false,
        py::arg("overwrite") = false, py::arg("in_place") = false,
        "`tracesmith merge`: the traces in one file (cluster::MergeTraces)");
  m.def(
      "check_output",
      [](const std::string& out, const std::vector<std::string>& inputs, bool overwrite,
         const std::string& how_to_overwrite) {
        tracesmith::Status st =
            tracesmith::CheckOutputFile(out, inputs, overwrite, how_to_overwrite);
        if (!st.ok()) Raise(st);
      },
      py::arg("out"), py::arg("inputs"), py::arg("overwrite"), py::arg("how_to_overwrite"),
      "The CLI's output rule (base/atomic_file.h CheckOutputFile): raises TraceError when `out` "
      "is an input, a directory or a device, or exists without overwrite");
  m.def(
      "write_tables",
      [](const std::string& path, const py::dict& tables, const std::vector<std::string>& strings) {
        tracesmith::Status st = WriteTables(path, tables, strings);
        if (!st.ok()) Raise(st);
      },
      py::arg("path"), py::arg("tables"), py::arg("strings"),
      "Writes {kind: [{field: array}, ...]} rows and the string table as an SBT file "
      "(atomically)");
  m.def(
      "enum_names",
      [] {
        py::dict out;
        for (const tracesmith::model::EnumField& f : tracesmith::model::EnumFields()) {
          py::str label(tracesmith::model::TableKindLabel(f.table));
          if (!out.contains(label)) out[label] = py::dict();
          py::list names;
          for (const char* n : f.names) names.append(n);
          out[label].cast<py::dict>()[py::str(f.field)] = names;
        }
        return out;
      },
      "{kind: {field: [name of value 0, 1, ...]}} of the enumeration fields (model/enum_fields.h)");
}
