// `tracesmith info RUN`: what a trace holds, at a glance. The events are
// streamed and counted, not kept: memory stays at one chunk plus metadata.
// A job's traces (job_loader.h) are described one file after the other, not
// merged: info is about the files (their state, damage and capture stats).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <type_traits>

#include "commands.h"
#include "job_loader.h"
#include "tracesmith/analysis/capture_cost.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/merge.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::cli {
namespace {

using namespace model;

// The file's state: closed by its writer, closed but with a damaged index,
// or unfinished (the writer stopped before closing it).
const char* FileState(const format::ReadReport& r) {
  if (r.indexed) return "complete (footer index present)";
  if (r.index_damaged)
    return "complete, footer index damaged (the writer closed the file; chunks were found by "
           "scanning)";
  return "unfinished (no footer index: the writer was stopped before closing; all whole chunks "
         "were recovered)";
}

// What info needs of the events, counted as they stream past: the file's
// event rows are never held (bounded memory on any size of trace).
struct EventSummary {
  std::map<TableKind, size_t> count;
  size_t total = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  uint64_t dropped = 0;
  std::map<uint32_t, uint64_t> kernels;  // per pid
  analysis::OverheadTally overheads;     // CUPTI's overhead rows per pid and kind
  // GPU instruction samples (counted stall reasons only) and their functions (pid, name id).
  uint64_t pc_samples = 0;
  std::set<std::pair<uint32_t, uint32_t>> pc_functions;
  std::map<uint32_t, bool> counted_stall;  // by stall reason's string id
};

Status Summarize(const Trace& batch, TableKind kind, EventSummary* s) {
  // The batch holds this chunk's events only.
  if (auto [lo, hi] = batch.TimeRange(); hi != 0)
    s->lo = std::min(s->lo, lo), s->hi = std::max(s->hi, hi);
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      if (RecordTraits<T>::kKind != kind) return;
      const auto& rows = batch.Rows<T>();
      s->count[kind] += rows.size();
      s->total += rows.size();
      if constexpr (std::is_same_v<T, DropEvent>)
        for (const DropEvent& d : rows) s->dropped += d.count;
      if constexpr (std::is_same_v<T, KernelEvent>)
        for (const KernelEvent& k : rows) ++s->kernels[k.pid];
      if constexpr (std::is_same_v<T, OverheadEvent>)
        for (const OverheadEvent& o : rows) analysis::TallyOverhead(o, &s->overheads);
      if constexpr (std::is_same_v<T, PcSampleEvent>)
        for (const PcSampleEvent& e : rows) {
          auto [it, added] = s->counted_stall.try_emplace(e.stall_id, false);
          if (added) it->second = model::IsCountedStall(batch.strings.Get(e.stall_id));
          if (!it->second) continue;
          s->pc_samples += e.samples;
          s->pc_functions.insert({e.pid, e.function_id});
        }
    }
  });
  return OkStatus();
}

int RunInfo(const std::string& path, bool strict) {
  // The damage is part of what info prints: no warning, no --strict error first.
  auto reader = format::SbtReader::Open(path);
  if (!reader.ok()) return ReportError(reader.status());
  EventSummary ev;
  Trace t;  // metadata only: strings, processes, devices, stats, stacks
  Status streamed = (*reader)->Stream(
      [&](const Trace& batch, TableKind kind) { return Summarize(batch, kind, &ev); },
      [&](const Trace& meta) {
        t = meta;
        return OkStatus();
      });
  if (!streamed.ok()) return ReportError(Status(streamed.code(), path + ": " + streamed.message()));
  const format::ReadReport& r = (*reader)->report();

  std::printf("File:        %s\n", path.c_str());
  std::printf("Size:        %s (%llu bytes)\n", HumanBytes(r.file_size).c_str(),
              static_cast<unsigned long long>(r.file_size));
  std::printf("Format:      SBT %u.%u, %s\n", r.major, r.minor, FileState(r));
  const uint64_t lo = ev.hi == 0 ? 0 : ev.lo, hi = ev.hi;
  if (hi > lo)
    std::printf("Time range:  %llu .. %llu ns (%s)\n", static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(hi), HumanDuration(hi - lo).c_str());

  for (const Process& p : t.Rows<Process>()) {
    std::printf("Process:     pid %u %s", p.pid, std::string(t.strings.Get(p.name_id)).c_str());
    if (p.cmdline_id) std::printf(" [%s]", std::string(t.strings.Get(p.cmdline_id)).c_str());
    if (p.hostname_id) std::printf(" on %s", std::string(t.strings.Get(p.hostname_id)).c_str());
    // Captures write -1 for "no rank"; importers leave 0 unset, and they
    // record no host name, which every capture does.
    if (p.rank > 0 || (p.rank == 0 && p.hostname_id)) std::printf(" rank %d", p.rank);
    if (p.driver_version)
      std::printf(", CUDA driver API %u.%u", p.driver_version / 1000,
                  (p.driver_version % 1000) / 10);
    if (p.runtime_version)
      std::printf(", CUDA runtime %u.%u", p.runtime_version / 1000,
                  (p.runtime_version % 1000) / 10);
    if (p.cupti_version) std::printf(", CUPTI API %u", p.cupti_version);
    std::printf("\n");
  }
  // Several processes (a merged run): each device line says whose it is.
  const bool several = t.Rows<Process>().size() > 1;
  for (const Device& d : t.Rows<Device>()) {
    std::printf("Device %u:    %s%s (sm_%u%u, %u SMs, %s", d.device_id,
                several ? StrFormat("[pid %u] ", d.pid).c_str() : "",
                std::string(t.strings.Get(d.name_id)).c_str(), d.cc_major, d.cc_minor, d.sm_count,
                HumanBytes(d.memory_bytes).c_str());
    if (d.core_clock_khz) std::printf(", %u MHz", d.core_clock_khz / 1000);
    std::printf(")");
    if (d.uuid_id) std::printf(" %s", std::string(t.strings.Get(d.uuid_id)).c_str());
    std::printf("\n");
  }

  std::printf("\nEvents:      %zu\n", ev.total);
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      auto it = ev.count.find(RecordTraits<T>::kKind);
      size_t n = it == ev.count.end() ? 0 : it->second;
      if (n) std::printf("  %-10s %12zu\n", RecordTraits<T>::kLabel, n);
    }
  });
  if (ev.total) std::printf("Bytes/event: %.2f\n", static_cast<double>(r.file_size) / ev.total);
  size_t frames = t.Rows<Frame>().size(), nodes = t.Rows<StackNode>().size();
  if (frames || nodes) std::printf("Call stacks: %zu frames, %zu call-site nodes\n", frames, nodes);
  if (auto rows = ev.count.find(TableKind::kPcSample); rows != ev.count.end() && rows->second)
    std::printf("GPU instruction samples: %s in %zu functions, %s rows\n",
                analysis::SampleCount(ev.pc_samples).c_str(), ev.pc_functions.size(),
                analysis::SampleCount(rows->second).c_str());

  const uint64_t dropped = ev.dropped;
  std::printf("\nCapture stats:\n");
  std::printf("  %-34s %llu%s\n", "dropped_records", static_cast<unsigned long long>(dropped),
              dropped ? "  (DATA LOSS)" : "");
  static const char* const kSeverity[] = {"", "  (warning)", "  (DATA LOSS)"};
  for (const Stat& s : t.Rows<Stat>()) {
    // The capture's cost stats are summarised under "Capture cost" below.
    if (t.strings.Get(s.name_id).rfind("capture.cost.", 0) == 0) continue;
    std::printf("  %-34s %lld%s\n", std::string(t.strings.Get(s.name_id)).c_str(),
                static_cast<long long>(s.value), kSeverity[s.severity % 3]);
  }
  std::printf("  %-34s %llu\n", "chunks_read", static_cast<unsigned long long>(r.chunks_read));
  if (r.chunks_skipped_unknown)
    std::printf("  %-34s %llu  (written by a newer TraceSmith)\n", "chunks_skipped_unknown",
                static_cast<unsigned long long>(r.chunks_skipped_unknown));
  if (!r.clean()) {
    if (r.chunks_damaged || !r.index_damaged)
      std::printf("  %-34s %llu  (DATA LOSS)\n", "chunks_damaged",
                  static_cast<unsigned long long>(r.chunks_damaged));
    if (r.events_lost)  // known only from the footer index
      std::printf("  %-34s %llu  (DATA LOSS)\n", "events_lost",
                  static_cast<unsigned long long>(r.events_lost));
    if (r.index_damaged)  // the chunks were found by scanning: nothing lost for it
      std::printf("  %-34s 1  (warning)\n", "footer_index_damaged");
    std::printf("  %-34s %llu of %llu\n", "readable_bytes",
                static_cast<unsigned long long>(r.valid_bytes),
                static_cast<unsigned long long>(r.file_size));
    std::printf("\nDamage (recovered everything else):\n%s", r.Describe().c_str());
  }
  for (const analysis::CaptureCost& c : analysis::ComputeCaptureCost(t, ev.kernels, ev.overheads)) {
    std::printf("\nCapture cost (pid %u):\n  %s\n", c.pid, analysis::CaptureCostLine(c).c_str());
    for (const std::string& d : analysis::CaptureCostDetails(c)) std::printf("    %s\n", d.c_str());
  }
  // A merged file of damaged inputs (cluster/merge.h): their damage is part of it.
  std::vector<std::string> input_damage;
  for (const MetadataEntry& m : t.Rows<MetadataEntry>())
    if (t.strings.Get(m.key_id) == cluster::kMergeInputDamageKey) {
      std::string d(t.strings.Get(m.value_id));
      if (std::find(input_damage.begin(), input_damage.end(), d) == input_damage.end())
        input_damage.push_back(std::move(d));
    }
  if (!input_damage.empty()) {
    std::printf(
        "\nDamage in the inputs of the merge (their readable part is what this file holds):\n");
    for (const std::string& d : input_damage) std::printf("%s\n", d.c_str());
  }
  if (strict && !input_damage.empty() && r.clean()) {
    std::fprintf(stderr,
                 "tracesmith: error: %s was merged from %zu damaged input%s (listed under Damage) "
                 "and --strict was given\n",
                 path.c_str(), input_damage.size(), input_damage.size() == 1 ? "" : "s");
    return kExitError;
  }
  if (strict && !r.clean()) {
    // The ranges are listed above (stdout); stderr says why the status is 1.
    std::fprintf(stderr, "tracesmith: error: %s (listed under Damage) and --strict was given\n",
                 r.Headline(path).c_str());
    return kExitError;
  }
  return kExitOk;
}

int RunInfoOfRun(const RunArgs& args, bool strict) {
  auto run = cluster::ResolveRun(args.names, args.single);
  if (!run.ok()) return ReportError(run.status());
  if (run->files.size() > 1) {
    std::printf("Run:         %s\n",
                cluster::RunDisplayName(args.names, run->files.size()).c_str());
    for (const std::string& f : run->files) std::printf("  %s\n", f.c_str());
  }
  int status = kExitOk;
  for (const std::string& f : run->files) {
    if (run->files.size() > 1) std::printf("\n");
    status = std::max(status, RunInfo(f, strict));
  }
  return status;
}

}  // namespace

void AddInfoCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "info", "Summarise a trace: devices, processes, event counts, time range, capture stats");
  auto args = std::make_shared<RunArgs>();
  auto strict = std::make_shared<bool>(false);
  AddRunArguments(cmd, args.get(), "The trace to describe");
  cmd->add_flag("--strict", *strict, "Exit with status 1 if a file is damaged");
  commands.emplace_back(cmd, [=] { return RunInfoOfRun(*args, *strict); });
}

}  // namespace tracesmith::cli
