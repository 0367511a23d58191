// The memory report as text (for people) and JSON (for scripts; schema in
// docs/memory.md).
#include <cstdio>

#include "tracesmith/analysis/json_writer.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/enum_fields.h"

namespace tracesmith::analysis {
namespace {

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Hex(uint64_t v) { return StrFormat("0x%llx", static_cast<unsigned long long>(v)); }

// A one-line sparkline of the live-bytes summary.
std::string Sparkline(const std::vector<uint64_t>& bins, uint64_t peak) {
  static constexpr const char* kLevels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  std::string s;
  for (uint64_t b : bins) s += kLevels[peak ? (b * 8 + peak - 1) / peak : 0];
  return s;
}

void Snapshot(const MemorySnapshot& s, const MemoryReportOptions& o, std::ostream& out) {
  out << "    by owner:\n";
  for (const OwnerBytes& b : s.by_owner)
    out << "      " << Pad(HumanBytes(b.bytes), 12) << Pad(std::to_string(b.count) + " blocks", 12)
        << b.owner << (b.library.empty() ? "" : "  [" + b.library + "]") << "\n";
  out << "    by call site:\n";
  for (const SiteBytes& b : s.by_site)
    out << "      " << Pad(HumanBytes(b.bytes), 12) << Pad(std::to_string(b.count) + " blocks", 12)
        << b.site << "  (" << b.owner << ")\n";
  if (!s.top.empty()) {
    out << "    largest allocations:\n";
    for (size_t i = 0; i < s.top.size() && i < o.top; ++i) {
      const AllocationRow& a = s.top[i];
      out << "      " << Pad(HumanBytes(a.bytes), 12) << Pad(Hex(a.address), 18)
          << Pad("at " + HumanDuration(a.alloc_ns), 18) << a.site << "  (" << a.owner << ")\n";
    }
  }
}

}  // namespace

void WriteMemoryText(const MemoryReport& r, const MemoryReportOptions& o, std::ostream& out) {
  out << "Memory: " << r.source << "\n";
  out << "  " << r.events << " allocation events over " << HumanDuration(r.duration_ns)
      << "; times are relative to the trace start\n";
  if (r.keys.empty()) {
    out << "\nNo allocations in this trace (was it captured with --kinds memory, a default?).\n";
    return;
  }
  if (!r.findings.empty()) {
    out << "\nFindings\n";
    for (const std::string& f : r.findings) out << "  - " << f << "\n";
  }
  for (const MemoryKeyReport& k : r.keys) {
    out << "\n"
        << MemorySpaceName(k.key.space) << " memory, " << k.device << ", " << k.process << "\n";
    out << "  peak " << HumanBytes(k.peak_bytes) << " at " << HumanDuration(k.at_peak.ts_ns)
        << (k.peak_place.text.empty() ? "" : ", " + k.peak_place.text)
        << (k.peak_place.evidence.empty() ? "" : " (" + k.peak_place.evidence + ")")
        << (k.peak_nvtx_range.empty() ? "" : ", inside NVTX range '" + k.peak_nvtx_range + "'")
        << " (" << k.at_peak.live_count << " blocks); at the end " << HumanBytes(k.end_bytes)
        << " in " << k.end_count << " blocks\n";
    out << "  " << k.totals.allocs << " allocations (" << HumanBytes(k.totals.allocated_bytes)
        << "), " << k.totals.frees << " frees";
    if (k.totals.unmatched_frees)
      out << ", " << k.totals.unmatched_frees << " frees of memory from before the capture";
    if (k.totals.mapped_bytes || k.totals.reserved_bytes)
      out << "; VMM at the end: " << HumanBytes(k.totals.mapped_bytes) << " mapped, "
          << HumanBytes(k.totals.reserved_bytes) << " address space reserved";
    out << "\n";
    if (k.graph_pool_end_bytes || k.graph_pool_peak_bytes)
      out << "  CUDA graph pools (allocated while graphs were captured): "
          << HumanBytes(k.graph_pool_end_bytes) << " in " << k.graph_pool_end_count
          << " blocks at the end, " << HumanBytes(k.graph_pool_peak_bytes) << " at the peak\n";
    if (!k.steps.method.empty())
      out << "  steps: " << k.steps.count << " (" << k.steps.method
          << (k.steps.warmup ? ", " + std::to_string(k.steps.warmup) + " of warm-up" : "")
          << "; bounds on the host: " << k.steps.bounds << ")\n";
    if (k.used_at_start)
      out << "  in use on the device at the capture's first reading (every process, contexts "
             "included): "
          << HumanBytes(*k.used_at_start) << "\n";
    out << "  over time |" << Sparkline(k.bins, k.peak_bytes) << "| " << k.summary << "\n";
    if (!k.owners.empty()) {
      out << "  owners (peak, at the end, first allocation; where the peak fell):\n";
      for (const OwnerPeak& p : k.owners)
        out << "    " << Pad(p.owner, 32) << Pad(HumanBytes(p.peak_bytes), 12)
            << Pad(HumanBytes(p.end_bytes), 12)
            << (p.peak_place.text.empty() ? HumanDuration(p.first_ns)
                                          : Pad(HumanDuration(p.first_ns), 14) + p.peak_place.text)
            << "\n";
    }
    out << "  live at the peak:\n";
    Snapshot(k.at_peak, o, out);
    if (k.at) {
      out << "  live at " << HumanDuration(k.at->ts_ns) << ": " << HumanBytes(k.at->live_bytes)
          << " in " << k.at->live_count << " blocks\n";
      Snapshot(*k.at, o, out);
    }
    if (!k.live_at_end.empty()) {
      out << "  still live at the end, by call site:\n";
      for (size_t i = 0; i < k.live_at_end.size() && i < o.top; ++i) {
        const SiteBytes& s = k.live_at_end[i];
        out << "    " << Pad(HumanBytes(s.bytes), 12)
            << Pad(std::to_string(s.count) + " blocks", 12) << s.site << "  (" << s.owner << ")"
            << (s.suspect ? "  <- piles up: leak?" : "") << "\n";
      }
    }
  }
  if (!r.churn.empty()) {
    out << "\nChurn (call sites that allocate and free), most frees first\n";
    for (size_t i = 0; i < r.churn.size() && i < o.top; ++i) {
      const ChurnRow& c = r.churn[i];
      out << "  " << Pad(std::to_string(c.frees) + " frees", 14)
          << Pad(StrFormat("%.1f/s", c.per_second), 12)
          << Pad("lives " + HumanDuration(c.mean_lifetime_ns), 20) << c.site << "  (" << c.owner
          << ")\n";
    }
  }
  if (r.out_of_order)
    out << "\nNote: " << r.out_of_order
        << " memory events arrived out of time order (a trace without an index); the "
           "accounting used them in file order.\n";
}

namespace {

const char* WhereName(StepPlace::Where w) {
  switch (w) {
    case StepPlace::kInStep:
      return "step";
    case StepPlace::kBefore:
      return "before";
    case StepPlace::kBetween:
      return "between";
    case StepPlace::kAfter:
      return "after";
    case StepPlace::kNoSteps:
      break;
  }
  return "";
}

void PlaceJson(JsonWriter& j, const StepPlace& p) {
  j.BeginObject("peak_place")
      .Str("where", WhereName(p.where))
      .UInt("step", p.step)
      .Bool("warmup", p.warmup)
      .Str("phase", p.phase)
      .Str("evidence", p.evidence)
      .Str("text", p.text)
      .EndObject();
}

void SnapshotJson(JsonWriter& j, std::string_view key, const MemorySnapshot& s) {
  j.BeginObject(key);
  j.UInt("ts_ns", s.ts_ns).UInt("live_bytes", s.live_bytes).UInt("live_count", s.live_count);
  j.BeginArray("by_owner");
  for (const OwnerBytes& b : s.by_owner)
    j.BeginObject()
        .Str("owner", b.owner)
        .Str("library", b.library)
        .UInt("bytes", b.bytes)
        .UInt("count", b.count)
        .EndObject();
  j.EndArray().BeginArray("by_site");
  for (const SiteBytes& b : s.by_site)
    j.BeginObject()
        .Str("site", b.site)
        .Str("owner", b.owner)
        .UInt("bytes", b.bytes)
        .UInt("count", b.count)
        .EndObject();
  j.EndArray().BeginArray("top");
  for (const AllocationRow& a : s.top)
    j.BeginObject()
        .UInt("address", a.address)
        .UInt("bytes", a.bytes)
        .UInt("alloc_ns", a.alloc_ns)
        .Str("memory_kind", model::MemoryKindName(a.memory_kind))
        .Str("owner", a.owner)
        .Str("site", a.site)
        .EndObject();
  j.EndArray().EndObject();
}

}  // namespace

void WriteMemoryJson(const MemoryReport& r, std::ostream& out) {
  JsonWriter j(out);
  j.BeginObject();
  j.Str("source", r.source).UInt("start_ns", r.start_ns).UInt("duration_ns", r.duration_ns);
  j.UInt("events", r.events).UInt("out_of_order", r.out_of_order);
  j.UInt("graph_captures", r.graph_captures);
  j.BeginObject("allocation_stacks")
      .UInt("allocations", r.stacks.allocations)
      .UInt("with_stack", r.stacks.with_stack)
      .UInt("without_stack_bytes", r.stacks.without_stack_bytes)
      .Bool("none", r.stacks.none())
      .Str("note", r.stacks.note)
      .EndObject();
  j.BeginArray("findings");
  for (const std::string& f : r.findings) j.Str("", f);
  j.EndArray().BeginArray("memory");
  for (const MemoryKeyReport& k : r.keys) {
    j.BeginObject();
    j.UInt("pid", k.key.pid).UInt("device_id", k.key.device_id);
    j.Str("space", MemorySpaceName(k.key.space)).Str("process", k.process).Str("device", k.device);
    j.Str("peak_nvtx_range", k.peak_nvtx_range);
    PlaceJson(j, k.peak_place);
    j.BeginObject("steps")
        .Str("method", k.steps.method)
        .UInt("count", k.steps.count)
        .UInt("warmup", k.steps.warmup)
        .Str("bounds", k.steps.bounds)
        .EndObject();
    j.UInt("peak_bytes", k.peak_bytes)
        .UInt("end_bytes", k.end_bytes)
        .UInt("end_count", k.end_count);
    const MemoryTotals& t = k.totals;
    j.UInt("allocs", t.allocs).UInt("frees", t.frees).UInt("allocated_bytes", t.allocated_bytes);
    j.UInt("unmatched_frees", t.unmatched_frees).UInt("replaced", t.replaced);
    j.UInt("mapped_bytes", t.mapped_bytes).UInt("reserved_bytes", t.reserved_bytes);
    j.UInt("imported_bytes", t.imported_bytes);
    if (k.used_at_start) j.UInt("used_at_start_bytes", *k.used_at_start);
    if (k.torch_allocated_peak) j.UInt("torch_allocated_peak_bytes", *k.torch_allocated_peak);
    if (k.torch_reserved_peak) j.UInt("torch_reserved_peak_bytes", *k.torch_reserved_peak);
    j.UInt("graph_pool_peak_bytes", k.graph_pool_peak_bytes);
    j.UInt("graph_pool_end_bytes", k.graph_pool_end_bytes);
    j.UInt("graph_pool_end_count", k.graph_pool_end_count);
    j.Str("summary", k.summary);
    j.BeginArray("bins");
    for (uint64_t b : k.bins) j.UInt("", b);
    j.EndArray();
    SnapshotJson(j, "at_peak", k.at_peak);
    if (k.at) SnapshotJson(j, "at", *k.at);
    j.BeginArray("owners");
    for (const OwnerPeak& p : k.owners) {
      j.BeginObject()
          .Str("owner", p.owner)
          .Str("library", p.library)
          .UInt("peak_bytes", p.peak_bytes)
          .UInt("peak_ns", p.peak_ns)
          .UInt("end_bytes", p.end_bytes)
          .UInt("first_ns", p.first_ns)
          .UInt("held_since_ns", p.held_since_ns);
      PlaceJson(j, p.peak_place);
      j.EndObject();
    }
    j.EndArray().BeginArray("live_at_end");
    for (const SiteBytes& s : k.live_at_end)
      j.BeginObject()
          .Str("site", s.site)
          .Str("owner", s.owner)
          .UInt("bytes", s.bytes)
          .UInt("count", s.count)
          .UInt("first_ns", s.first_ns)
          .UInt("last_ns", s.last_ns)
          .Bool("leak_suspect", s.suspect)
          .EndObject();
    j.EndArray().EndObject();
  }
  j.EndArray().BeginArray("churn");
  for (const ChurnRow& c : r.churn)
    j.BeginObject()
        .Str("site", c.site)
        .Str("owner", c.owner)
        .UInt("allocs", c.allocs)
        .UInt("frees", c.frees)
        .UInt("bytes", c.bytes)
        .Num("per_second", c.per_second)
        .UInt("mean_lifetime_ns", c.mean_lifetime_ns)
        .EndObject();
  j.EndArray().EndObject();
}

}  // namespace tracesmith::analysis
