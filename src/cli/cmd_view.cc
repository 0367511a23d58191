// `tracesmith view RUN`: events as a time-ordered table, with filters. A job's
// traces (job_loader.h) are merged first; each row then names its process.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "commands.h"
#include "job_loader.h"
#include "trace_loader.h"
#include "tracesmith/analysis/event_filter.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/printable.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/model/stack_builder.h"

namespace tracesmith::cli {
namespace {

using namespace model;

struct ViewOptions {
  RunArgs run;
  size_t limit = 50;
  std::vector<std::string> kinds;
  std::string name_regex;
  int64_t stream = -1;
  int64_t device = -1;
  std::string from, to;
  bool stats = false;
  bool stacks = false;
  bool strict = false;
};

// Fields shown in their own columns are left out of DETAILS.
bool IsColumnField(const char* name) {
  static const char* const kColumns[] = {"start_ns",  "end_ns",    "ts_ns",   "pid",
                                         "device_id", "stream_id", "name_id", "demangled_id"};
  for (const char* c : kColumns)
    if (std::strcmp(c, name) == 0) return true;
  return false;
}

// `with_pid`: the trace holds several processes, so DETAILS starts with the
// row's pid (one process: the pid says nothing).
template <typename T>
std::string Details(const T& e, bool with_pid) {
  std::string out = with_pid ? "pid=" + std::to_string(e.pid) : std::string();
  for (size_t i = 0; i < RecordTraits<T>::kNumFields; ++i) {
    const FieldDesc& f = RecordTraits<T>::kAllFields[i];
    if (IsColumnField(f.name)) continue;
    uint64_t v = LoadField(&e, f);
    if (v == 0) continue;
    if (!out.empty()) out += ' ';
    out += f.name;
    out += '=';
    if (f.type == FieldType::kF64) {
      double d;
      std::memcpy(&d, &v, 8);
      out += StrFormat("%g", d);
    } else if (f.type == FieldType::kI32 || f.type == FieldType::kI64) {
      out += std::to_string(static_cast<int64_t>(v));
    } else {
      out += std::to_string(v);
    }
  }
  return out;
}

// "fn (file:line) [module+0xOFF]"; unsymbolized, "module+0xOFF" alone (the
// offset once); "[py] fn (file:line)" for Python.
std::string FrameText(const Trace& t, uint32_t frame_id) {
  if (frame_id == 0 || frame_id > t.Rows<Frame>().size()) return "?";
  const Frame& f = t.Rows<Frame>()[frame_id - 1];
  std::string module;
  if (f.kind == kFrameNative && f.mapping_id)
    for (const Mapping& m : t.Rows<Mapping>())
      if (m.mapping_id == f.mapping_id) {
        module = StrFormat("%s+0x%llx", std::string(t.strings.Get(m.path_id)).c_str(),
                           static_cast<unsigned long long>(f.rel_pc));
        break;
      }
  std::string fn(t.strings.Get(f.function_id));
  if (fn.empty() && !module.empty()) return module;
  std::string out =
      fn.empty() ? StrFormat("0x%llx", static_cast<unsigned long long>(f.rel_pc)) : fn;
  if (f.file_id)
    out += StrFormat(" (%s:%u)", std::string(t.strings.Get(f.file_id)).c_str(), f.line);
  if (!module.empty()) out += " [" + module + "]";
  if (f.kind == kFramePython) out = "[py] " + out;
  return out;
}

template <typename T>
uint32_t StackIdOf(const T& e) {
  if constexpr (requires { e.stack_id; })
    return e.stack_id;
  else
    return 0;
}

analysis::EventFilterSpec FilterSpec(const ViewOptions& o) {
  analysis::EventFilterSpec spec;
  spec.kinds = o.kinds;
  spec.name_regex = o.name_regex;
  spec.stream = o.stream;
  spec.device = o.device;
  spec.from = o.from;
  spec.to = o.to;
  return spec;
}

int RunViewStats(const ViewOptions& o, cluster::OpenedRun& run, analysis::EventFilter filter);

int RunView(const ViewOptions& o) {
  auto filter = analysis::EventFilter::Make(FilterSpec(o));
  if (!filter.ok()) return ReportError(filter.status());
  auto run = OpenRunSource(o.run, o.strict, "showing");
  if (!run.ok()) return ReportError(run.status());
  if (o.stats) return RunViewStats(o, *run, std::move(*filter));
  Trace t;
  const std::string& path = run->path();  // empty for a run read on the fly
  if (Status st = ReadRun(*run, o.strict, "showing",
                          [&](format::TraceSource& source, format::ReadReport* damage) {
                            Status read = format::ReadTrace(source, &t);
                            if (!read.ok())
                              return path.empty()
                                         ? read
                                         : Status(read.code(), path + ": " + read.message());
                            *damage = source.report();
                            return OkStatus();
                          });
      !st.ok())
    return ReportError(st);
  std::set<uint32_t> pids;
  for (const Process& p : t.Rows<Process>()) pids.insert(p.pid);
  const bool with_pid = pids.size() > 1;
  if (Status w = filter->Resolve(t.TimeRange().first); !w.ok()) return ReportError(w);
  const uint64_t t0 = t.TimeRange().first;
  const std::vector<analysis::EventRef> refs = analysis::SelectEvents(t, *filter);

  std::printf("%14s %12s %-8s %4s %7s  %-48s %s\n", "START(us)", "DUR(us)", "KIND", "DEV", "STREAM",
              "NAME", "DETAILS");
  size_t shown = 0;
  for (const analysis::EventRef& r : refs) {
    if (shown++ >= o.limit) break;
    ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) {
        if (RecordTraits<T>::kKind != r.kind) return;
        const T& e = t.Rows<T>()[r.row];
        std::string name = Printable(EventName(t, e));
        if (name.size() > 48) name = name.substr(0, 45) + "...";
        int64_t dev = EventDevice(e), stream = EventStream(e);
        char dur[32] = "?";  // an end before the start: the end is unknown
        if (EventEnd(e) >= EventStart(e))
          std::snprintf(dur, sizeof(dur), "%.3f", double(EventEnd(e) - EventStart(e)) / 1e3);
        std::printf("%14.3f %12s %-8s %4s %7s  %-48s %s\n", (EventStart(e) - t0) / 1e3, dur,
                    RecordTraits<T>::kLabel, dev < 0 ? "-" : std::to_string(dev).c_str(),
                    stream < 0 ? "-" : std::to_string(stream).c_str(), name.c_str(),
                    Printable(Details(e, with_pid)).c_str());
        if (o.stacks && StackIdOf(e))
          for (uint32_t f : StackFrames(t, StackIdOf(e)))
            std::printf("%14s   at %s\n", "", Printable(FrameText(t, f)).c_str());
      }
    });
  }
  if (refs.size() > o.limit)
    std::printf(
        "... %zu more events (use --limit N, or filter with --kind/--name/--stream/"
        "--device/--from/--to)\n",
        refs.size() - o.limit);
  return kExitOk;
}

// --stats: counts and per-name durations, aggregated while the events stream
// past (bounded memory on any size of trace; analysis/event_filter.h).
int RunViewStats(const ViewOptions& o, cluster::OpenedRun& run, analysis::EventFilter filter) {
  const std::string& path = run.path();  // empty for a run read on the fly
  analysis::EventStats stats;
  if (Status st = ReadRun(run, o.strict, "showing",
                          [&](format::TraceSource& source, format::ReadReport* damage) {
                            auto read = analysis::StreamEventStats(source, std::move(filter));
                            if (!read.ok()) {
                              const Status& e = read.status();
                              return e.code() == StatusCode::kInvalidArgument || path.empty()
                                         ? e
                                         : Status(e.code(), path + ": " + e.message());
                            }
                            stats = std::move(*read);
                            *damage = source.report();
                            return OkStatus();
                          });
      !st.ok())
    return ReportError(st);
  std::printf("%llu events match\n\n%-10s %12s\n", static_cast<unsigned long long>(stats.matched),
              "KIND", "COUNT");
  for (auto& [k, n] : stats.per_kind)
    std::printf("%-10s %12llu\n", k.c_str(), static_cast<unsigned long long>(n));
  std::printf("\n%-8s %10s %14s %12s %12s %12s  %s\n", "KIND", "COUNT", "TOTAL", "AVG", "MIN",
              "MAX", "NAME");
  for (size_t i = 0; i < stats.per_name.size() && i < o.limit; ++i) {
    const analysis::NameStats& a = stats.per_name[i];
    auto dur = [&a](uint64_t v) { return a.timed ? HumanDuration(v) : std::string("?"); };
    std::printf("%-8s %10llu %14s %12s %12s %12s  %s\n", a.kind.c_str(),
                static_cast<unsigned long long>(a.count), dur(a.total_ns).c_str(),
                dur(a.mean_ns()).c_str(), dur(a.min_ns).c_str(), dur(a.max_ns).c_str(),
                a.name.c_str());
  }
  return kExitOk;
}

}  // namespace

void AddViewCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("view", "List a trace's events in time order, with filters");
  auto o = std::make_shared<ViewOptions>();
  AddRunArguments(cmd, &o->run, "The trace to list");
  cmd->add_option("-n,--limit", o->limit, "Show at most N events (rows with --stats)")
      ->default_val(50);
  cmd->add_option(
         "-k,--kind", o->kinds,
         "Only these kinds (" + analysis::EventKindLabels() + "); repeat or comma-separate")
      ->delimiter(',');
  cmd->add_option("--name", o->name_regex, "Only events whose name matches this regex");
  cmd->add_option("--stream", o->stream, "Only this stream id");
  cmd->add_option("--device", o->device, "Only this device id");
  cmd->add_option("--from", o->from, "Start of the window, relative to the trace start (e.g. 2ms)");
  cmd->add_option("--to", o->to, "End of the window, relative to the trace start (e.g. 1.5s)");
  cmd->add_flag("--stats", o->stats, "Per-kind counts and per-name duration statistics");
  cmd->add_flag("--stacks", o->stacks, "Print the host call stack under each event");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunView(*o); });
}

}  // namespace tracesmith::cli
