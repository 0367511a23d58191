#include "tracesmith/analysis/kernel_page.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "kernel_page_lines.h"
#include "pc_samples_json.h"
#include "tracesmith/analysis/json_writer.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/printable.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

bool Matches(const FunctionSamples& f, std::string_view name) {
  return f.name.find(name) != std::string::npos || f.function.find(name) != std::string::npos;
}

// The text of `line` of `path` (1-based), trimmed; "" when unreadable. Files are
// read once each.
class SourceFiles {
 public:
  std::string Line(const std::string& path, uint32_t line) {
    auto [it, fresh] = files_.try_emplace(path);
    if (fresh) {
      std::ifstream in(path);
      for (std::string l; in && std::getline(in, l) && it->second.size() < 1'000'000;)
        it->second.push_back(std::move(l));
    }
    if (line == 0 || line > it->second.size()) return "";
    std::string s = it->second[line - 1];
    const size_t b = s.find_first_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, 160);
  }

 private:
  std::map<std::string, std::vector<std::string>> files_;
};

template <typename T>
void SortByShare(std::vector<T>* v) {
  std::stable_sort(v->begin(), v->end(),
                   [](const T& a, const T& b) { return a.samples > b.samples; });
}

// " wait 45.0%, selected 35.0%": the first reasons of `stalls`.
std::string StallList(const std::vector<StallShare>& stalls) {
  std::string out;
  for (size_t k = 0; k < stalls.size() && k < 6; ++k)
    out += StrFormat("%s %s %.1f%%", k ? "," : "",
                     std::string(model::ShortStallName(stalls[k].reason)).c_str(), stalls[k].share);
  return out;
}

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

void WriteLaunchText(const KernelPageLaunch& l, std::ostream& out) {
  out << StrFormat(
      "\nLaunch with correlation id %u (pid %u, GPU %u, stream %u): launch %llu of "
      "%llu, at +%s for %s\n",
      l.correlation_id, l.pid, l.device, l.stream, U(l.index), U(l.launches),
      HumanDuration(l.offset_ns).c_str(), HumanDuration(l.end_ns - l.start_ns).c_str());
  if (!l.note.empty()) out << "  (" << Printable(l.note) << ")\n";
  if (!l.joined) {
    out << "  no drain window of the kernel's samples overlaps this launch: the lines below are "
           "all its launches' samples\n";
    return;
  }
  out << StrFormat("  its samples: %s from %llu drain window%s", SampleCount(l.samples).c_str(),
                   U(l.windows), l.windows == 1 ? "" : "s");
  if (l.shared_windows)
    out << StrFormat(
        " (%llu shared with %llu other launch%s of the kernel: split by how long each "
        "ran in the window, an estimate)\n",
        U(l.shared_windows), U(l.other_launches), l.other_launches == 1 ? "" : "es");
  else
    out << StrFormat(" (no other launch of the kernel ran in %s: all %s samples are this one's)\n",
                     l.windows == 1 ? "it" : "them", l.windows == 1 ? "its" : "their");
  out << "  its stall reasons:" << StallList(l.stalls) << "\n";
}

void WriteCountsHeader(const FunctionCounts& c, std::ostream& out) {
  out << StrFormat(
      "  executed (exact, --sass-counts: the sum over its launches): %s warp "
      "instructions",
      ExactCount(c.executed).c_str());
  if (c.threads())
    out << StrFormat(", %s thread instructions (%.1f threads per warp instruction)",
                     ExactCount(c.thread_executed).c_str(),
                     c.executed ? double(c.thread_executed) / double(c.executed) : 0.0);
  out << StrFormat("; %llu instructions counted\n", U(c.instructions));
}

// The opcode histogram (CUTracer's opcode_only view).
void WriteOpcodes(const FunctionCounts& c, std::ostream& out) {
  out << "\n  OPCODE                       EXECUTED  SHARE"
      << (c.threads() ? "   THREAD INSTRS" : "") << "  INSTRUCTIONS\n";
  for (const OpcodeCount& o : c.opcodes) {
    out << StrFormat("  %-22s %15s %5.1f%%",
                     o.opcode.empty() ? "(no SASS text)" : Printable(o.opcode).c_str(),
                     ExactCount(o.executed).c_str(), o.share);
    if (c.threads()) out << StrFormat(" %15s", ExactCount(o.thread_executed).c_str());
    out << StrFormat("  %llu\n", U(o.instructions));
  }
  if (std::any_of(c.opcodes.begin(), c.opcodes.end(),
                  [](const OpcodeCount& o) { return o.opcode.empty(); }))
    out << "  (instructions without SASS text: `tracesmith symbolize` where the CUDA toolkit's "
           "nvdisasm is, with the trace's .cubins directory beside it)\n";
}

}  // namespace

uint64_t KernelTime(const CompactTrace& t) {
  uint64_t kernel_ns = 0;
  for (const GpuOp& op : t.ops())
    if (op.kind() == OpKind::kKernel) kernel_ns += op.duration();
  return kernel_ns;
}

StatusOr<PcSampleReport> SampledReport(const CompactTrace& t, const CallSiteRules& rules) {
  PcSampleReport all = SummarizePcSamples(t, KernelTime(t), rules);
  if (all.empty())
    return NotFound(
        "the trace has no GPU instruction samples (capture with `tracesmith profile "
        "--pc-sampling`)");
  return all;
}

std::string SampledKernelNames(const PcSampleReport& r) {
  std::string names;
  for (size_t i = 0; i < r.functions.size() && i < 10; ++i) names += "\n  " + r.functions[i].name;
  return names;
}

InstructionSamples SamplesOf(const CompactTrace& t, const FunctionSamples& f) {
  InstructionSamples pcs;
  for (const auto& [key, samples] : t.pc_samples().samples())
    if (key.pid == f.pid && key.function_id == f.function_id)
      pcs[{key.cubin_crc, key.pc_offset}][key.stall_id] += samples;
  return pcs;
}

std::vector<KernelPageLine> PageLines(const CompactTrace& t, const FunctionSamples& f,
                                      const InstructionSamples& pcs, uint64_t total,
                                      const InstructionCounts* counts) {
  std::unordered_map<uint32_t, bool> counted;  // by stall id
  const InstructionIndex index = IndexInstructions(t);
  // Every instruction with samples or counts, by (cubin CRC, pc offset).
  std::map<std::pair<uint64_t, uint32_t>, KernelPageInstruction> found;
  for (const auto& [where, stalls] : pcs) {
    KernelPageInstruction i;
    for (const auto& [stall, n] : stalls) {
      auto [c, added] = counted.try_emplace(stall, false);
      if (added) c->second = model::IsCountedStall(t.String(stall));
      if (!c->second || n == 0) continue;
      i.samples += n;
      i.stalls.push_back({std::string(t.String(stall)), n, 0, 0});
    }
    if (i.samples == 0) continue;
    for (StallShare& x : i.stalls) x.share = Percent(x.samples, i.samples);
    SortByShare(&i.stalls);
    i.share = Percent(i.samples, total);
    found[where] = std::move(i);
  }
  if (counts)
    for (const auto& [where, n] : *counts) {
      KernelPageInstruction& i = found[where];
      i.counted = true;
      i.executed = n.executed;
      i.thread_executed = n.thread_executed;
    }
  std::map<std::pair<std::string, uint32_t>, KernelPageLine> lines;
  for (auto& [where, i] : found) {
    i.pc_offset = where.second;
    const PcSamples::Key key = InstructionKey(where.first, f.pid, f.function_id, where.second);
    if (uint32_t text = index.SassOf(key)) i.sass = t.String(text);
    const InstructionIndex::Line* l = index.LineOf(key);
    std::string file = l ? std::string(t.String(l->file_id)) : "";
    const uint32_t line = file.empty() ? 0 : l->line;
    KernelPageLine& out = lines[{file, line}];
    out.file = file;
    out.line = line;
    out.samples += i.samples;
    out.executed += i.executed;
    out.thread_executed += i.thread_executed;
    out.instructions.push_back(std::move(i));
  }
  SourceFiles sources;
  std::vector<KernelPageLine> out;
  for (auto& [key, l] : lines) {
    l.share = Percent(l.samples, total);
    if (!l.file.empty()) l.source = sources.Line(l.file, l.line);
    std::stable_sort(l.instructions.begin(), l.instructions.end(),
                     [](const auto& a, const auto& b) { return a.pc_offset < b.pc_offset; });
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

// A counted function's page summary when it has no samples: its names and GPU time.
FunctionSamples AsFunction(const CompactTrace& t, const FunctionCounts& c) {
  FunctionSamples f;
  f.name = c.name;
  f.function = c.function;
  f.pid = c.pid;
  f.function_id = c.function_id;
  f.name_id = t.pc_samples().OpNameOf(c.pid, c.function_id);
  f.kernels = c.kernels;
  f.kernel_ns = c.kernel_ns;
  f.gpu_share = Percent(c.kernel_ns, KernelTime(t));
  return f;
}

std::string CountedKernelNames(const std::vector<FunctionCounts>& counted) {
  std::string names;
  for (size_t i = 0; i < counted.size() && i < 10; ++i) names += "\n  " + counted[i].name;
  return names;
}

}  // namespace

StatusOr<KernelPage> BuildKernelPage(const CompactTrace& t, std::string_view name,
                                     const CallSiteRules& rules) {
  std::vector<FunctionCounts> counted = SummarizeSassCounts(t);
  StatusOr<PcSampleReport> sampled = SampledReport(t, rules);
  if (!sampled.ok() && counted.empty())
    return NotFound(
        "the trace has no GPU instruction samples nor instruction counts (capture with "
        "`tracesmith profile --pc-sampling` or `--sass-counts`)");
  KernelPage page;
  const FunctionSamples* chosen = nullptr;
  if (sampled.ok())
    for (const FunctionSamples& f : sampled->functions) {  // by GPU time: the heaviest first
      if (!Matches(f, name)) continue;
      if (!chosen)
        chosen = &f;
      else
        page.also_matched.push_back(f.name);
    }
  const FunctionCounts* count = nullptr;
  for (const FunctionCounts& c : counted) {
    const bool same = chosen && c.pid == chosen->pid && c.function_id == chosen->function_id;
    if (same ||
        (!chosen && !count &&
         (c.name.find(name) != std::string::npos || c.function.find(name) != std::string::npos)))
      count = &c;
  }
  if (!chosen && !count) {
    std::string names;
    if (sampled.ok())
      names += "; the sampled kernels with most GPU time:" + SampledKernelNames(*sampled);
    if (!counted.empty())
      names += "; the counted kernels (--sass-counts) with most instructions executed:" +
               CountedKernelNames(counted);
    return NotFound(std::string("no sampled or counted kernel's name contains '") +
                    std::string(name) + "'" + names);
  }
  page.sampled = chosen != nullptr;
  page.function = chosen ? *chosen : AsFunction(t, *count);
  InstructionCounts counts;
  if (count) {
    counts = CountsOf(t.meta(), count->pid, count->function_id);
    page.counts = *count;
  }
  page.lines = PageLines(t, page.function, chosen ? SamplesOf(t, *chosen) : InstructionSamples{},
                         page.function.samples, count ? &counts : nullptr);
  return page;
}

void WriteKernelPageText(const KernelPage& page, std::ostream& out) {
  const FunctionSamples& f = page.function;
  // Template-heavy names run to thousands of characters (PyTorch's
  // distribution kernels: ~5,000): the head, and --json keeps the whole.
  constexpr size_t kMaxName = 300;
  const std::string name = Printable(f.name);
  out << "Kernel "
      << (name.size() > kMaxName ? name.substr(0, kMaxName - 3) + "... (--json: the whole name)"
                                 : name)
      << "\n";
  if (f.function != f.name) out << "  function " << Printable(f.function) << "\n";
  if (page.sampled)
    out << StrFormat("  %s samples; %llu launches, %s of GPU time (%.1f%% of kernel time)\n",
                     SampleCount(f.samples).c_str(), U(f.kernels),
                     HumanDuration(f.kernel_ns).c_str(), f.gpu_share);
  else
    out << StrFormat(
        "  %llu launches, %s of GPU time (%.1f%% of kernel time); no GPU instruction "
        "samples (--pc-sampling), exact counts only\n",
        U(f.kernels), HumanDuration(f.kernel_ns).c_str(), f.gpu_share);
  if (page.counts) WriteCountsHeader(*page.counts, out);
  if (page.sampled) out << "  stall reasons:" << StallList(f.stalls) << "\n";
  for (const SiteShare& s : f.sites)
    out << StrFormat("  launched from %s: %.1f%% of the samples, %llu launches\n",
                     Printable(s.site).c_str(), s.share, U(s.launches));
  for (const std::string& other : page.also_matched)
    out << "  (the name also matches " << Printable(other) << ")\n";
  if (page.launch) WriteLaunchText(*page.launch, out);
  // Columns: samples and their share (sampled), executions (counted).
  const bool counts = page.counts.has_value(), threads = counts && page.counts->threads();
  auto columns = [&](uint64_t samples, double share, uint64_t executed, uint64_t thread_executed,
                     bool counted) {
    std::string c;
    if (page.sampled) c += StrFormat("%9s %5.1f%% ", SampleCount(samples).c_str(), share);
    if (counts)
      c += counted ? StrFormat("%14s ", ExactCount(executed).c_str()) : StrFormat("%14s ", "-");
    if (threads)
      c += counted ? StrFormat("%15s ", ExactCount(thread_executed).c_str())
                   : StrFormat("%15s ", "-");
    return c;
  };
  out << "\n"
      << (page.sampled ? "  SAMPLES  SHARE " : "") << (counts ? "      EXECUTED " : "")
      << (threads ? "  THREAD INSTRS " : "") << " LINE / INSTRUCTION"
      << (page.launch && page.launch->joined ? "  (this launch's samples)\n" : "\n");
  for (const KernelPageLine& l : page.lines) {
    std::string where = l.file.empty() ? "(no line info: compile with -lineinfo)"
                                       : StrFormat("%s:%u", l.file.c_str(), l.line);
    out << columns(l.samples, l.share, l.executed, l.thread_executed, true) << " "
        << Printable(where) << (l.source.empty() ? "" : "   ") << Printable(l.source) << "\n";
    for (const KernelPageInstruction& i : l.instructions) {
      std::string stalls;
      for (size_t k = 0; k < i.stalls.size() && k < 3; ++k)
        stalls += StrFormat("%s%s %.0f%%", k ? ", " : "",
                            std::string(model::ShortStallName(i.stalls[k].reason)).c_str(),
                            i.stalls[k].share);
      out << columns(i.samples, i.share, i.executed, i.thread_executed, i.counted)
          << StrFormat("     +0x%04x  %-48s %s", i.pc_offset, Printable(i.sass).c_str(),
                       stalls.c_str());
      out << "\n";
    }
  }
  if (counts) WriteOpcodes(*page.counts, out);
}

void WriteKernelPageJson(const KernelPage& page, std::ostream& out) {
  const FunctionSamples& f = page.function;
  JsonWriter j(out);
  j.BeginObject()
      .Str("name", f.name)
      .Str("function", f.function)
      .UInt("pid", f.pid)
      .UInt("samples", f.samples)
      .UInt("kernels", f.kernels)
      .UInt("kernel_ns", f.kernel_ns)
      .Num("gpu_share_pct", f.gpu_share)
      .Bool("sampled", page.sampled);
  StallsJson(j, "stalls", f.stalls);
  SitesJson(j, "sites", f.sites);
  if (page.counts) CountsJson(j, *page.counts);
  j.BeginArray("lines");
  for (const KernelPageLine& l : page.lines) {
    j.BeginObject()
        .Str("file", l.file)
        .UInt("line", l.line)
        .Str("source", l.source)
        .UInt("samples", l.samples)
        .Num("share_pct", l.share);
    if (page.counts) j.UInt("executed", l.executed).UInt("thread_executed", l.thread_executed);
    j.BeginArray("instructions");
    for (const KernelPageInstruction& i : l.instructions) {
      j.BeginObject()
          .UInt("pc_offset", i.pc_offset)
          .Str("sass", i.sass)
          .UInt("samples", i.samples)
          .Num("share_pct", i.share);
      if (page.counts)
        j.Bool("counted", i.counted)
            .UInt("executed", i.executed)
            .UInt("thread_executed", i.thread_executed);
      StallsJson(j, "stalls", i.stalls);
      j.EndObject();
    }
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.BeginArray("also_matched");
  for (const std::string& s : page.also_matched) j.Str("", s);
  j.EndArray();
  if (const std::optional<KernelPageLaunch>& l = page.launch) {
    j.BeginObject("launch")
        .UInt("correlation_id", l->correlation_id)
        .UInt("pid", l->pid)
        .UInt("device", l->device)
        .UInt("stream", l->stream)
        .UInt("start_ns", l->start_ns)
        .UInt("end_ns", l->end_ns)
        .UInt("offset_ns", l->offset_ns)
        .UInt("index", l->index)
        .UInt("launches", l->launches)
        .Str("note", l->note)
        .Bool("joined", l->joined)
        .UInt("samples", l->samples)
        .UInt("windows", l->windows)
        .UInt("shared_windows", l->shared_windows)
        .UInt("other_launches", l->other_launches);
    StallsJson(j, "stalls", l->stalls);
    j.EndObject();
  }
  j.EndObject();
  out << "\n";
}

}  // namespace tracesmith::analysis
