#include "tracesmith/analysis/kernel_page.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "json_writer.h"
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

}  // namespace

StatusOr<KernelPage> BuildKernelPage(const CompactTrace& t, std::string_view name,
                                     const CallSiteRules& rules) {
  uint64_t kernel_ns = 0;
  for (const GpuOp& op : t.ops())
    if (op.kind() == OpKind::kKernel) kernel_ns += op.duration();
  PcSampleReport all = SummarizePcSamples(t, kernel_ns, rules);
  if (all.empty())
    return NotFound(
        "the trace has no GPU instruction samples (capture with `tracesmith profile "
        "--pc-sampling`)");
  KernelPage page;
  const FunctionSamples* chosen = nullptr;
  for (const FunctionSamples& f : all.functions) {  // by GPU time: the first match is the heaviest
    if (!Matches(f, name)) continue;
    if (!chosen)
      chosen = &f;
    else
      page.also_matched.push_back(f.name);
  }
  if (!chosen) {
    std::string names;
    for (size_t i = 0; i < all.functions.size() && i < 10; ++i)
      names += "\n  " + all.functions[i].name;
    return NotFound(std::string("no sampled kernel's name contains '") + std::string(name) +
                    "'; the sampled kernels with most GPU time:" + names);
  }
  page.function = *chosen;
  // Every sampled instruction of the function, with its reasons.
  std::unordered_map<uint32_t, bool> is_function, counted;
  struct Acc {
    uint64_t samples = 0;
    std::map<uint32_t, uint64_t> stalls;  // by stall id
  };
  std::map<std::pair<uint64_t, uint32_t>, Acc> pcs;  // (cubin, offset)
  uint32_t function_id = 0;
  for (const auto& [key, samples] : t.pc_samples().samples()) {
    if (key.pid != chosen->pid) continue;
    auto [f, fresh] = is_function.try_emplace(key.function_id, false);
    if (fresh) f->second = t.String(key.function_id) == chosen->function;
    if (!f->second) continue;
    auto [c, added] = counted.try_emplace(key.stall_id, false);
    if (added) c->second = model::IsCountedStall(t.String(key.stall_id));
    if (!c->second) continue;
    function_id = key.function_id;
    Acc& a = pcs[{key.cubin_crc, key.pc_offset}];
    a.samples += samples;
    a.stalls[key.stall_id] += samples;
  }
  const InstructionIndex index = IndexInstructions(t);
  std::map<std::pair<std::string, uint32_t>, KernelPageLine> lines;
  for (const auto& [where, a] : pcs) {
    const PcSamples::Key key = InstructionKey(where.first, chosen->pid, function_id, where.second);
    const InstructionIndex::Line* l = index.LineOf(key);
    std::string file = l ? std::string(t.String(l->file_id)) : "";
    const uint32_t line = file.empty() ? 0 : l->line;
    KernelPageLine& out = lines[{file, line}];
    out.file = file;
    out.line = line;
    out.samples += a.samples;
    KernelPageInstruction i;
    i.pc_offset = where.second;
    if (uint32_t text = index.SassOf(key)) i.sass = t.String(text);
    i.samples = a.samples;
    i.share = Percent(a.samples, chosen->samples);
    for (const auto& [stall, n] : a.stalls)
      i.stalls.push_back({std::string(t.String(stall)), n, 0, Percent(n, a.samples)});
    SortByShare(&i.stalls);
    out.instructions.push_back(std::move(i));
  }
  SourceFiles sources;
  for (auto& [key, l] : lines) {
    l.share = Percent(l.samples, chosen->samples);
    if (!l.file.empty()) l.source = sources.Line(l.file, l.line);
    std::stable_sort(l.instructions.begin(), l.instructions.end(),
                     [](const auto& a, const auto& b) { return a.pc_offset < b.pc_offset; });
    page.lines.push_back(std::move(l));
  }
  return page;
}

void WriteKernelPageText(const KernelPage& page, std::ostream& out) {
  const FunctionSamples& f = page.function;
  out << "Kernel " << Printable(f.name) << "\n";
  if (f.function != f.name) out << "  function " << Printable(f.function) << "\n";
  out << StrFormat("  %s samples; %llu launches, %s of GPU time (%.1f%% of kernel time)\n",
                   SampleCount(f.samples).c_str(), static_cast<unsigned long long>(f.kernels),
                   HumanDuration(f.kernel_ns).c_str(), f.gpu_share);
  out << "  stall reasons:";
  for (size_t k = 0; k < f.stalls.size() && k < 6; ++k)
    out << StrFormat("%s %s %.1f%%", k ? "," : "",
                     std::string(model::ShortStallName(f.stalls[k].reason)).c_str(),
                     f.stalls[k].share);
  out << "\n";
  for (const SiteShare& s : f.sites)
    out << StrFormat("  launched from %s: %.1f%% of the samples, %llu launches\n",
                     Printable(s.site).c_str(), s.share,
                     static_cast<unsigned long long>(s.launches));
  for (const std::string& other : page.also_matched)
    out << "  (the name also matches " << Printable(other) << ")\n";
  out << "\n  SAMPLES  SHARE  LINE / INSTRUCTION\n";
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
  j.EndArray().EndObject();
  out << "\n";
}

}  // namespace tracesmith::analysis
