#include "tracesmith/timeline/pc_samples.h"

#include <algorithm>
#include <map>

#include "tracesmith/base/printable.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

using namespace model;

namespace {

constexpr std::string_view kNotIssued = "_not_issued";

// The stall reasons CUPTI's PC sampling reports on Hopper (the Nsight Compute
// profiling guide's warp stall reasons), in plain words.
struct StallWords {
  std::string_view name, words;
};
constexpr StallWords kStallWords[] = {
    {"selected", "issuing (not stalled)"},
    {"not_selected", "ready, but another warp issued"},
    {"long_scoreboard", "waiting for a global/local memory (L1TEX) result"},
    {"lg_throttle", "global/local memory instruction queue full"},
    {"wait", "fixed-latency dependency"},
    {"short_scoreboard", "waiting for a shared memory or special math (MIO) result"},
    {"mio_throttle", "shared memory / special math (MIO) instruction queue full"},
    {"math_pipe_throttle", "math pipeline busy"},
    {"tex_throttle", "texture instruction queue full"},
    {"barrier", "waiting at a block barrier (__syncthreads)"},
    {"membar", "waiting at a memory barrier (fence)"},
    {"branch_resolving", "waiting for a branch target"},
    {"no_instructions", "no instruction fetched (instruction cache miss)"},
    {"dispatch_stall", "held back by the dispatcher"},
    {"drain", "waiting for memory stores to drain at exit"},
    {"sleeping", "sleeping (nanosleep, yield)"},
    {"imc_miss", "waiting for the constant cache (IMC miss)"},
    {"misc", "miscellaneous hardware reason"},
};

}  // namespace

std::string StallDescription(std::string_view cupti_name) {
  std::string_view name = ShortStallName(cupti_name);
  const bool not_issued = name.ends_with(kNotIssued);
  if (not_issued) name.remove_suffix(kNotIssued.size());
  for (const StallWords& w : kStallWords)
    if (w.name == name) return std::string(w.words) + (not_issued ? ", nothing issued" : "");
  return std::string(ShortStallName(cupti_name));
}

std::string SampleCount(uint64_t n) {
  if (n < 10'000) return std::to_string(n);
  if (n < 1'000'000) return StrFormat("%.1f k", double(n) / 1e3);
  if (n < 1'000'000'000) return StrFormat("%.1f M", double(n) / 1e6);
  return StrFormat("%.1f G", double(n) / 1e9);
}

std::string SourceLineText(std::string_view file, uint32_t line) {
  if (file.empty()) return "(no line info: compile with -lineinfo)";
  if (const size_t slash = file.rfind('/'); slash != std::string_view::npos)
    file.remove_prefix(slash + 1);
  std::string name = Printable(file);
  if (name.size() > 48) name = name.substr(0, 45) + "...";
  return name + ":" + std::to_string(line);
}

// ---- aggregation -----------------------------------------------------------

size_t PcSamples::KeyHash::operator()(const Key& k) const {
  uint64_t h = k.cubin_crc * 0x9E3779B97F4A7C15ull;
  for (uint32_t v : {k.pid, k.function_id, k.pc_offset, k.stall_id})
    h = (h ^ v) * 0x100000001B3ull + (h >> 29);
  return static_cast<size_t>(h);
}

void PcSamples::AddSamples(const std::vector<PcSampleEvent>& rows) {
  rows_ += rows.size();
  for (const PcSampleEvent& e : rows) {
    samples_[Key{e.cubin_crc, e.pid, e.function_id, e.pc_offset, e.stall_id}] += e.samples;
    // A drain's rows come together, a function's mostly in a run: the last few
    // windows are the only candidates.
    Window* w = nullptr;
    for (size_t k = windows_.size(); k > 0 && k + 8 > windows_.size(); --k) {
      Window& c = windows_[k - 1];
      if (c.start_ns == e.start_ns && c.end_ns == e.end_ns && c.pid == e.pid &&
          c.function_id == e.function_id) {
        w = &c;
        break;
      }
    }
    if (!w)
      w = &windows_.emplace_back(
          Window{e.start_ns, std::max(e.start_ns, e.end_ns), e.pid, e.function_id, 0});
    w->samples += e.samples;
  }
}

void PcSamples::AddKernels(const std::vector<KernelEvent>& rows) {
  kernel_rows_ += rows.size();
  for (const KernelEvent& e : rows) {
    if (e.demangled_id == 0 || e.demangled_id == e.name_id) continue;
    // A kernel name once per process: a small cache in front of the map keeps
    // this to a compare per row (a trace launches few distinct kernels).
    const uint64_t key = uint64_t(e.pid) << 32 | e.name_id;
    uint64_t& recent = recent_[(e.name_id ^ (e.pid * 0x9E37u)) & (recent_.size() - 1)];
    if (recent == key + 1) continue;
    recent = key + 1;
    demangled_.try_emplace(key, e.demangled_id);
  }
}

uint32_t PcSamples::OpNameOf(uint32_t pid, uint32_t mangled_id) const {
  auto it = demangled_.find(uint64_t(pid) << 32 | mangled_id);
  return it == demangled_.end() ? mangled_id : it->second;
}

InstructionIndex IndexInstructions(const Trace& meta) {
  InstructionIndex index;
  for (const PcLine& l : meta.Rows<PcLine>())
    index.lines[InstructionKey(l.cubin_crc, l.pid, l.function_id, l.pc_offset)] = {l.file_id,
                                                                                   l.line};
  for (const PcSass& x : meta.Rows<PcSass>())
    index.sass[InstructionKey(x.cubin_crc, x.pid, x.function_id, x.pc_offset)] = x.text_id;
  return index;
}

InstructionIndex IndexInstructions(const CompactTrace& t) { return IndexInstructions(t.meta()); }

const InstructionIndex::Line* InstructionIndex::LineOf(const PcSamples::Key& k) const {
  auto it = lines.find(k);
  return it == lines.end() ? nullptr : &it->second;
}

uint32_t InstructionIndex::SassOf(const PcSamples::Key& k) const {
  auto it = sass.find(k);
  return it == sass.end() ? 0 : it->second;
}

// ---- the report ------------------------------------------------------------

std::vector<StallShare> StallShares(const std::map<uint32_t, uint64_t>& counts, const Trace& meta,
                                    uint64_t total) {
  std::map<std::string_view, StallShare> by_reason;  // by name without _not_issued
  for (const auto& [id, samples] : counts) {
    std::string_view name = meta.strings.Get(id);
    const bool counted = IsCountedStall(name);
    const bool not_issued = name.ends_with(kNotIssued);
    if (not_issued) name.remove_suffix(kNotIssued.size());
    StallShare& s = by_reason[name];
    if (counted)
      s.samples += samples;
    else if (not_issued)  // only the _not_issued part of a reason is kept, apart
      s.not_issued += samples;
  }
  std::vector<StallShare> out;
  for (auto& [name, s] : by_reason) {
    if (!s.samples && !s.not_issued) continue;
    s.reason = std::string(name);
    s.share = Percent(s.samples, total);
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const StallShare& a, const StallShare& b) { return a.samples > b.samples; });
  return out;
}

namespace {

struct LineOf {
  uint32_t file_id = 0, line = 0;
};

// One function while its samples are added up.
struct FunctionAcc {
  uint64_t samples = 0;
  std::map<uint32_t, uint64_t> stalls;  // every reason (counted or not) by string id
  struct Pc {
    uint64_t samples = 0;
    LineOf line;
    std::map<uint32_t, uint64_t> stalls;  // counted reasons by string id
  };
  std::map<std::pair<uint64_t, uint32_t>, Pc> pcs;          // by (cubin, pc_offset)
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> lines;  // by (file_id, line)
};

// The hottest `max` instructions of `f`, with their lines, top reasons and SASS.
std::vector<InstructionShare> HotInstructions(const FunctionAcc& f, uint32_t pid,
                                              uint32_t function_id, const Trace& meta,
                                              const InstructionIndex& index, size_t max) {
  std::vector<const decltype(f.pcs)::value_type*> hot;  // hottest first
  for (const auto& pc : f.pcs) hot.push_back(&pc);
  std::stable_sort(hot.begin(), hot.end(), [](const auto* a, const auto* b) {
    return a->second.samples > b->second.samples;
  });
  std::vector<InstructionShare> out;
  for (size_t k = 0; k < hot.size() && k < max; ++k) {
    const auto& [where, pc] = *hot[k];
    InstructionShare s;
    s.pc_offset = where.second;
    if (pc.line.file_id)
      s.file = std::string(meta.strings.Get(pc.line.file_id)), s.line = pc.line.line;
    s.samples = pc.samples;
    s.share = Percent(pc.samples, f.samples);
    uint32_t top = 0;
    uint64_t top_samples = 0;
    for (const auto& [stall, n] : pc.stalls)
      if (n > top_samples) top = stall, top_samples = n;
    s.top_stall = std::string(meta.strings.Get(top));
    s.top_stall_share = Percent(top_samples, pc.samples);
    if (uint32_t text = index.SassOf(InstructionKey(where.first, pid, function_id, where.second)))
      s.sass = std::string(meta.strings.Get(text));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<FunctionSamples> SampledFunctions(const PcSamples& in, const Trace& meta,
                                              size_t max_lines) {
  std::vector<FunctionSamples> out;
  if (in.empty()) return out;
  // Source lines and SASS text of the sampled instructions.
  const InstructionIndex index = IndexInstructions(meta);
  std::unordered_map<uint32_t, bool> counted;                // by stall id
  std::map<std::pair<uint32_t, uint32_t>, FunctionAcc> acc;  // by (pid, function_id)
  uint64_t all = 0;
  for (const auto& [key, samples] : in.samples()) {
    auto [cit, added] = counted.try_emplace(key.stall_id, false);
    if (added) cit->second = IsCountedStall(meta.strings.Get(key.stall_id));
    FunctionAcc& f = acc[{key.pid, key.function_id}];
    f.stalls[key.stall_id] += samples;
    if (!cit->second) continue;
    f.samples += samples;
    all += samples;
    FunctionAcc::Pc& pc = f.pcs[{key.cubin_crc, key.pc_offset}];
    pc.samples += samples;
    pc.stalls[key.stall_id] += samples;
    if (const InstructionIndex::Line* l =
            index.LineOf(InstructionKey(key.cubin_crc, key.pid, key.function_id, key.pc_offset)))
      pc.line = {l->file_id, l->line};
    f.lines[{pc.line.file_id, pc.line.file_id ? pc.line.line : 0}] += samples;
  }
  for (const auto& [id, f] : acc) {
    if (f.samples == 0) continue;
    FunctionSamples o;
    o.pid = id.first;
    o.function_id = id.second;
    o.name_id = in.OpNameOf(id.first, id.second);
    o.function = std::string(meta.strings.Get(id.second));
    o.name = std::string(meta.strings.Get(o.name_id));
    if (o.name.empty()) o.name = o.function.empty() ? "(unnamed function)" : o.function;
    o.samples = f.samples;
    o.share = Percent(f.samples, all);
    o.stalls = StallShares(f.stalls, meta, f.samples);
    for (const auto& [where, samples] : f.lines)
      o.lines.push_back({std::string(meta.strings.Get(where.first)), where.second, samples,
                         Percent(samples, f.samples)});
    std::stable_sort(o.lines.begin(), o.lines.end(),
                     [](const LineShare& a, const LineShare& b) { return a.samples > b.samples; });
    if (o.lines.size() > max_lines) o.lines.resize(max_lines);
    o.instructions =
        HotInstructions(f, id.first, id.second, meta, index, FunctionSamples::kMaxRows);
    out.push_back(std::move(o));
  }
  return out;
}

PcSampleReport SummarizePcSamples(const CompactTrace& t, uint64_t kernel_ns,
                                  const CallSiteRules& rules) {
  const PcSamples& in = t.pc_samples();
  PcSampleReport r;
  r.rows = in.rows();
  if (in.empty()) return r;
  r.functions = SampledFunctions(in, t.meta());
  for (const FunctionSamples& f : r.functions) r.samples += f.samples;
  // GPU time of each sampled function: its kernel ops in the window, by the
  // name the ops carry, of its process.
  const uint32_t nstrings = static_cast<uint32_t>(t.meta().strings.size());
  std::vector<bool> wanted(nstrings + 1, false);
  std::unordered_map<uint64_t, size_t> index_of;          // pid << 32 | op name id -> function
  std::unordered_map<uint64_t, size_t> index_of_sampled;  // pid << 32 | function id
  for (size_t i = 0; i < r.functions.size(); ++i) {
    const FunctionSamples& f = r.functions[i];
    index_of_sampled.emplace(uint64_t(f.pid) << 32 | f.function_id, i);
    if (f.name_id <= nstrings) wanted[f.name_id] = true;
    index_of.emplace(uint64_t(f.pid) << 32 | f.name_id, i);
  }
  // Their launches, each with its call site (when the trace has stacks).
  bool stacks = false;
  for (const HostCall& c : t.calls()) stacks |= c.stack_id != 0;
  CallSiteNamer namer(t.meta(), rules);
  std::unordered_map<uint32_t, uint32_t> site_of_stack;
  std::map<std::string, uint32_t> site_index;
  std::vector<std::string> site_names;
  std::vector<std::vector<SampledLaunch>> launches(r.functions.size());
  uint64_t kernels_in_window = 0;
  for (uint32_t oi = 0; oi < t.ops().size(); ++oi) {
    const GpuOp op = t.ops()[oi];
    if (op.kind() != OpKind::kKernel) continue;
    ++kernels_in_window;
    if (op.name_id > nstrings || !wanted[op.name_id]) continue;
    auto it = index_of.find(uint64_t(t.PidOfLane(op.lane())) << 32 | op.name_id);
    if (it == index_of.end()) continue;
    r.functions[it->second].kernels++;
    r.functions[it->second].kernel_ns += op.duration();
    if (!stacks) continue;
    const uint32_t stack = t.StackOfOp(oi);
    auto [sit, fresh] = site_of_stack.try_emplace(stack, 0);
    if (fresh) {
      auto [named, added] =
          site_index.try_emplace(namer.Name(stack), static_cast<uint32_t>(site_names.size()));
      if (added) site_names.push_back(named->first);
      sit->second = named->second;
    }
    launches[it->second].push_back({op.start_ns, op.end_ns, sit->second});
  }
  // Each sampled function's drain windows.
  std::vector<std::vector<PcSamples::Window>> windows(r.functions.size());
  for (const PcSamples::Window& w : in.windows()) {
    auto it = index_of_sampled.find(uint64_t(w.pid) << 32 | w.function_id);
    if (it != index_of_sampled.end()) windows[it->second].push_back(w);
  }
  r.window_narrower = kernels_in_window < in.kernel_rows();

  for (size_t i = 0; i < r.functions.size(); ++i) {
    FunctionSamples& out = r.functions[i];
    out.gpu_share = Percent(out.kernel_ns, kernel_ns);
    std::vector<SampledLaunch>& ls = launches[i];
    if (ls.empty()) continue;
    std::stable_sort(ls.begin(), ls.end(), [](const SampledLaunch& a, const SampledLaunch& b) {
      return a.start_ns < b.start_ns;
    });
    const std::vector<uint64_t> per_site =
        JoinSamplesToSites(windows[i], ls, site_names.size(), out.samples, &out.by_window);
    std::map<uint32_t, SiteShare> sites;
    for (const SampledLaunch& l : ls) {
      SiteShare& site = sites[l.site];
      site.launches++;
      site.kernel_ns += l.end_ns - l.start_ns;
    }
    for (auto& [index, site] : sites) {
      site.site = site_names[index];
      site.samples = per_site[index];
      site.share = Percent(site.samples, out.samples);
      out.sites.push_back(std::move(site));
    }
    std::stable_sort(out.sites.begin(), out.sites.end(),
                     [](const SiteShare& a, const SiteShare& b) { return a.samples > b.samples; });
  }
  std::stable_sort(r.functions.begin(), r.functions.end(),
                   [](const FunctionSamples& a, const FunctionSamples& b) {
                     if (a.kernel_ns != b.kernel_ns) return a.kernel_ns > b.kernel_ns;
                     if (a.samples != b.samples) return a.samples > b.samples;
                     return a.name < b.name;
                   });
  return r;
}

}  // namespace tracesmith::analysis
