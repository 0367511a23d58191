#include "tracesmith/analysis/kernel_page.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "json_writer.h"
#include "kernel_page_lines.h"
#include "pc_samples_json.h"
#include "tracesmith/analysis/compact_trace.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/printable.h"
#include "tracesmith/model/event_names.h"

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

}  // namespace

StatusOr<PcSampleReport> SampledReport(const CompactTrace& t, const CallSiteRules& rules) {
  uint64_t kernel_ns = 0;
  for (const GpuOp& op : t.ops())
    if (op.kind() == OpKind::kKernel) kernel_ns += op.duration();
  PcSampleReport all = SummarizePcSamples(t, kernel_ns, rules);
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
                                      const InstructionSamples& pcs, uint64_t total) {
  std::unordered_map<uint32_t, bool> counted;  // by stall id
  const InstructionIndex index = IndexInstructions(t);
  std::map<std::pair<std::string, uint32_t>, KernelPageLine> lines;
  for (const auto& [where, stalls] : pcs) {
    KernelPageInstruction i;
    i.pc_offset = where.second;
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
    const PcSamples::Key key = InstructionKey(where.first, f.pid, f.function_id, where.second);
    if (uint32_t text = index.SassOf(key)) i.sass = t.String(text);
    const InstructionIndex::Line* l = index.LineOf(key);
    std::string file = l ? std::string(t.String(l->file_id)) : "";
    const uint32_t line = file.empty() ? 0 : l->line;
    KernelPageLine& out = lines[{file, line}];
    out.file = file;
    out.line = line;
    out.samples += i.samples;
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

StatusOr<KernelPage> BuildKernelPage(const CompactTrace& t, std::string_view name,
                                     const CallSiteRules& rules) {
  ASSIGN_OR_RETURN(const PcSampleReport all, SampledReport(t, rules));
  KernelPage page;
  const FunctionSamples* chosen = nullptr;
  for (const FunctionSamples& f : all.functions) {  // by GPU time: the first match is the heaviest
    if (!Matches(f, name)) continue;
    if (!chosen)
      chosen = &f;
    else
      page.also_matched.push_back(f.name);
  }
  if (!chosen)
    return NotFound(std::string("no sampled kernel's name contains '") + std::string(name) +
                    "'; the sampled kernels with most GPU time:" + SampledKernelNames(all));
  page.function = *chosen;
  page.lines = PageLines(t, *chosen, SamplesOf(t, *chosen), chosen->samples);
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
  out << StrFormat("  %s samples; %llu launches, %s of GPU time (%.1f%% of kernel time)\n",
                   SampleCount(f.samples).c_str(), U(f.kernels), HumanDuration(f.kernel_ns).c_str(),
                   f.gpu_share);
  out << "  stall reasons:" << StallList(f.stalls) << "\n";
  for (const SiteShare& s : f.sites)
    out << StrFormat("  launched from %s: %.1f%% of the samples, %llu launches\n",
                     Printable(s.site).c_str(), s.share, U(s.launches));
  for (const std::string& other : page.also_matched)
    out << "  (the name also matches " << Printable(other) << ")\n";
  if (page.launch) WriteLaunchText(*page.launch, out);
  out << "\n  SAMPLES  SHARE  LINE / INSTRUCTION"
      << (page.launch && page.launch->joined ? "  (this launch's samples)\n" : "\n");
  for (const KernelPageLine& l : page.lines) {
    std::string where = l.file.empty() ? "(no line info: compile with -lineinfo)"
                                       : StrFormat("%s:%u", l.file.c_str(), l.line);
    out << StrFormat("%9s %5.1f%%  %s%s%s\n", SampleCount(l.samples).c_str(), l.share,
                     Printable(where).c_str(), l.source.empty() ? "" : "   ",
                     Printable(l.source).c_str());
    for (const KernelPageInstruction& i : l.instructions) {
      std::string stalls;
      for (size_t k = 0; k < i.stalls.size() && k < 3; ++k)
        stalls += StrFormat("%s%s %.0f%%", k ? ", " : "",
                            std::string(model::ShortStallName(i.stalls[k].reason)).c_str(),
                            i.stalls[k].share);
      out << StrFormat("%9s %5.1f%%      +0x%04x  %-48s %s\n", SampleCount(i.samples).c_str(),
                       i.share, i.pc_offset, Printable(i.sass).c_str(), stalls.c_str());
    }
  }
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
      .Num("gpu_share_pct", f.gpu_share);
  StallsJson(j, "stalls", f.stalls);
  SitesJson(j, "sites", f.sites);
  j.BeginArray("lines");
  for (const KernelPageLine& l : page.lines) {
    j.BeginObject()
        .Str("file", l.file)
        .UInt("line", l.line)
        .Str("source", l.source)
        .UInt("samples", l.samples)
        .Num("share_pct", l.share);
    j.BeginArray("instructions");
    for (const KernelPageInstruction& i : l.instructions) {
      j.BeginObject()
          .UInt("pc_offset", i.pc_offset)
          .Str("sass", i.sass)
          .UInt("samples", i.samples)
          .Num("share_pct", i.share);
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
