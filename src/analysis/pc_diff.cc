// Two runs' GPU instruction samples compared per kernel (pc_diff.h).
#include "tracesmith/analysis/pc_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "pc_samples_json.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/printable.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::analysis {
namespace {

// One kernel of one side, added up over the processes that sampled it.
struct Side {
  uint64_t samples = 0;
  std::map<std::pair<std::string, uint32_t>, uint64_t> lines;  // (file, line)
  std::map<std::string, uint64_t> stalls;                      // counted samples by reason
};

std::map<std::string, Side> ByKernel(const std::vector<FunctionSamples>& functions, uint64_t* all) {
  std::map<std::string, Side> out;
  for (const FunctionSamples& f : functions) {
    Side& s = out[f.name];
    s.samples += f.samples;
    *all += f.samples;
    for (const LineShare& l : f.lines) s.lines[{l.file, l.line}] += l.samples;
    for (const StallShare& r : f.stalls) s.stalls[r.reason] += r.samples;
  }
  return out;
}

// The `top` keys of `m` with most samples.
template <typename K>
std::vector<K> Hottest(const std::map<K, uint64_t>& m, size_t top) {
  std::vector<std::pair<uint64_t, K>> v;
  for (const auto& [k, n] : m)
    if (n > 0) v.push_back({n, k});
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<K> out;
  for (size_t i = 0; i < v.size() && i < top; ++i) out.push_back(v[i].second);
  return out;
}

// The rows of the keys among the `top` hottest of either side, largest change first.
template <typename K, typename Fill>
std::vector<SampleShareChange> Changes(const std::map<K, uint64_t>& a, uint64_t total_a,
                                       const std::map<K, uint64_t>& b, uint64_t total_b, size_t top,
                                       Fill&& fill) {
  std::set<K> keys;
  for (const K& k : Hottest(a, top)) keys.insert(k);
  for (const K& k : Hottest(b, top)) keys.insert(k);
  std::vector<SampleShareChange> out;
  for (const K& k : keys) {
    SampleShareChange c;
    fill(k, &c);
    auto ia = a.find(k), ib = b.find(k);
    c.samples_a = ia == a.end() ? 0 : ia->second;
    c.samples_b = ib == b.end() ? 0 : ib->second;
    c.share_a = Percent(c.samples_a, total_a);
    c.share_b = Percent(c.samples_b, total_b);
    out.push_back(std::move(c));
  }
  // Largest change first; equal changes (none, often), hottest first.
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    if (std::fabs(x.delta()) != std::fabs(y.delta()))
      return std::fabs(x.delta()) > std::fabs(y.delta());
    return x.share_a + x.share_b > y.share_a + y.share_b;
  });
  return out;
}

void SortBySamples(std::vector<KernelSampleDiff>* v) {
  std::stable_sort(v->begin(), v->end(), [](const KernelSampleDiff& x, const KernelSampleDiff& y) {
    return x.share_a + x.share_b > y.share_a + y.share_b;
  });
}

}  // namespace

PcSampleDiff DiffPcSamples(const std::vector<FunctionSamples>& a,
                           const std::vector<FunctionSamples>& b, size_t top) {
  PcSampleDiff d;
  const std::map<std::string, Side> sa = ByKernel(a, &d.samples_a);
  const std::map<std::string, Side> sb = ByKernel(b, &d.samples_b);
  std::set<std::string> names;
  for (const auto& [name, s] : sa) names.insert(name);
  for (const auto& [name, s] : sb) names.insert(name);
  const Side none;
  for (const std::string& name : names) {
    auto ia = sa.find(name), ib = sb.find(name);
    const Side& x = ia == sa.end() ? none : ia->second;
    const Side& y = ib == sb.end() ? none : ib->second;
    KernelSampleDiff k;
    k.name = name;
    k.samples_a = x.samples;
    k.samples_b = y.samples;
    k.share_a = Percent(x.samples, d.samples_a);
    k.share_b = Percent(y.samples, d.samples_b);
    if (!x.samples || !y.samples) {
      (x.samples ? d.only_a : d.only_b).push_back(std::move(k));
      continue;
    }
    k.lines = Changes(x.lines, x.samples, y.lines, y.samples, top,
                      [](const std::pair<std::string, uint32_t>& where, SampleShareChange* c) {
                        c->file = where.first;
                        c->line = where.second;
                      });
    k.stalls = Changes(x.stalls, x.samples, y.stalls, y.samples, top,
                       [](const std::string& reason, SampleShareChange* c) { c->reason = reason; });
    d.kernels.push_back(std::move(k));
  }
  SortBySamples(&d.kernels);
  SortBySamples(&d.only_a);
  SortBySamples(&d.only_b);
  return d;
}

void WritePcSampleDiffText(const PcSampleDiff& d, size_t top, std::ostream& out) {
  if (d.empty()) return;
  out << StrFormat(
      "\nGPU instruction samples (each kernel's lines and stall reasons, A -> B)\n"
      "  A: %s samples, B: %s samples\n",
      SampleCount(d.samples_a).c_str(), SampleCount(d.samples_b).c_str());
  if (!d.samples_a || !d.samples_b) {  // nothing to compare: its kernels are not listed
    out << StrFormat(
        "  only %s has samples (capture both with `tracesmith profile --pc-sampling`)\n",
        d.samples_a ? "A" : "B");
    return;
  }
  auto name = [](const std::string& n) {
    std::string s = Printable(n);
    return s.size() > 90 ? s.substr(0, 87) + "..." : s;
  };
  auto row = [&](const char* kind, const std::string& what, const SampleShareChange& c) {
    out << StrFormat("    %-6s %-44s %5.1f%% -> %5.1f%%  %+6.1f\n", kind, what.c_str(), c.share_a,
                     c.share_b, c.delta());
  };
  for (size_t i = 0; i < d.kernels.size() && i < top; ++i) {
    const KernelSampleDiff& k = d.kernels[i];
    out << StrFormat("  %s: %s samples (%.1f%% of A's) -> %s (%.1f%% of B's)\n",
                     name(k.name).c_str(), SampleCount(k.samples_a).c_str(), k.share_a,
                     SampleCount(k.samples_b).c_str(), k.share_b);
    for (const SampleShareChange& c : k.lines) row("line", SourceLineText(c.file, c.line), c);
    for (const SampleShareChange& c : k.stalls)
      row("stall", Printable(model::ShortStallName(c.reason)), c);
  }
  if (d.kernels.size() > top)
    out << "  ... " << d.kernels.size() - top << " more kernels sampled in both (use --top N)\n";
  for (const auto& [side, list] : {std::pair{"A", &d.only_a}, {"B", &d.only_b}}) {
    for (size_t i = 0; i < list->size() && i < top; ++i) {
      const KernelSampleDiff& k = (*list)[i];
      const bool in_a = side[0] == 'A';
      out << StrFormat("  only in %s: %s: %s samples (%.1f%%)\n", side, name(k.name).c_str(),
                       SampleCount(in_a ? k.samples_a : k.samples_b).c_str(),
                       in_a ? k.share_a : k.share_b);
    }
    if (list->size() > top)
      out << "  ... " << list->size() - top << " more only in " << side << " (use --top N)\n";
  }
}

void PcSampleDiffJson(JsonWriter& j, const PcSampleDiff& d) {
  j.BeginObject("gpu_samples").UInt("samples_a", d.samples_a).UInt("samples_b", d.samples_b);
  auto changes = [&](std::string_view key, const std::vector<SampleShareChange>& v, bool lines) {
    j.BeginArray(key);
    for (const SampleShareChange& c : v) {
      j.BeginObject();
      if (lines)
        j.Str("file", c.file).UInt("line", c.line);
      else
        j.Str("reason", c.reason).Str("short_name", model::ShortStallName(c.reason));
      j.UInt("samples_a", c.samples_a)
          .UInt("samples_b", c.samples_b)
          .Num("share_a_pct", c.share_a)
          .Num("share_b_pct", c.share_b)
          .EndObject();
    }
    j.EndArray();
  };
  for (auto [key, list] :
       {std::pair{"kernels", &d.kernels}, {"only_a", &d.only_a}, {"only_b", &d.only_b}}) {
    j.BeginArray(key);
    for (const KernelSampleDiff& k : *list) {
      j.BeginObject()
          .Str("name", k.name)
          .UInt("samples_a", k.samples_a)
          .UInt("samples_b", k.samples_b)
          .Num("share_a_pct", k.share_a)
          .Num("share_b_pct", k.share_b);
      changes("lines", k.lines, true);
      changes("stalls", k.stalls, false);
      j.EndObject();
    }
    j.EndArray();
  }
  j.EndObject();
}

}  // namespace tracesmith::analysis
