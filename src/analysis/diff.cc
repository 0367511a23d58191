#include "tracesmith/analysis/diff.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>

#include "pc_samples_json.h"
#include "tracesmith/analysis/json_writer.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::analysis {

namespace {

std::vector<DiffRow> DiffTables(const std::vector<NamedStats>& a,
                                const std::vector<NamedStats>& b) {
  std::map<std::string, DiffRow> rows;
  for (const NamedStats& s : a) {
    DiffRow& r = rows[s.name];
    r.name = s.name;
    r.count_a = s.stats.count;
    r.total_a = s.stats.total_ns;
  }
  for (const NamedStats& s : b) {
    DiffRow& r = rows[s.name];
    r.name = s.name;
    r.count_b = s.stats.count;
    r.total_b = s.stats.total_ns;
  }
  std::vector<DiffRow> out;
  for (auto& [name, r] : rows) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const DiffRow& x, const DiffRow& y) {
    uint64_t dx = static_cast<uint64_t>(std::abs(x.delta_ns()));
    uint64_t dy = static_cast<uint64_t>(std::abs(y.delta_ns()));
    return dx > dy;
  });
  return out;
}

std::string Signed(int64_t ns) {
  // Appended, not `"-" + string`: GCC 12 at -O3 reports a false -Wrestrict
  // overlap inside that operator+.
  std::string s = ns < 0 ? "-" : "+";
  s += HumanDuration(static_cast<uint64_t>(ns < 0 ? -ns : ns));
  return s;
}

void Table(const char* title, const std::vector<DiffRow>& rows, size_t top, std::ostream& out) {
  char buf[1024];
  out << "\n" << title << "\n";
  std::snprintf(buf, sizeof buf, "  %12s %12s %13s %9s %9s %9s  %s\n", "TIME A", "TIME B", "DELTA",
                "COUNT A", "COUNT B", "DELTA", "NAME");
  out << buf;
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const DiffRow& r = rows[i];
    std::string name = r.name.size() > 90 ? r.name.substr(0, 87) + "..." : r.name;
    std::snprintf(buf, sizeof buf, "  %12s %12s %13s %9llu %9llu %+9lld  %s\n",
                  HumanDuration(r.total_a).c_str(), HumanDuration(r.total_b).c_str(),
                  Signed(r.delta_ns()).c_str(), static_cast<unsigned long long>(r.count_a),
                  static_cast<unsigned long long>(r.count_b),
                  static_cast<long long>(r.delta_count()), name.c_str());
    out << buf;
  }
  if (rows.size() > top) out << "  ... " << rows.size() - top << " more (use --top N)\n";
}

}  // namespace

TraceDiff DiffReports(const AnalysisReport& a, const AnalysisReport& b) {
  TraceDiff d;
  d.a = a.source;
  d.b = b.source;
  d.wall_a = a.wall_ns();
  d.wall_b = b.wall_ns();
  d.kernels_a = a.kernel_count;
  d.kernels_b = b.kernel_count;
  d.kernel_ns_a = a.kernel_ns;
  d.kernel_ns_b = b.kernel_ns;
  d.kernels = DiffTables(a.kernels, b.kernels);
  if (!a.call_sites.empty() || !b.call_sites.empty())
    d.call_sites = DiffTables(a.call_sites, b.call_sites);
  return d;
}

void WriteTextDiff(const TraceDiff& d, size_t top, std::ostream& out) {
  char buf[512];
  out << "A: " << d.a << "\nB: " << d.b << "\n";
  for (const std::string& w : d.warnings) out << "Warning: " << w << "\n";
  out << "\n";
  auto line = [&](const char* what, uint64_t a, uint64_t b, bool time) {
    int64_t delta = static_cast<int64_t>(b) - static_cast<int64_t>(a);
    double pct = a ? 100.0 * double(delta) / double(a) : 0.0;
    if (time) {
      std::snprintf(buf, sizeof buf, "  %-14s %12s -> %12s  %13s (%+.1f%%)\n", what,
                    HumanDuration(a).c_str(), HumanDuration(b).c_str(), Signed(delta).c_str(), pct);
    } else {
      std::snprintf(buf, sizeof buf, "  %-14s %12llu -> %12llu  %+13lld (%+.1f%%)\n", what,
                    static_cast<unsigned long long>(a), static_cast<unsigned long long>(b),
                    static_cast<long long>(delta), pct);
    }
    out << buf;
  };
  out << "Totals\n";
  line("wall time", d.wall_a, d.wall_b, true);
  line("kernel time", d.kernel_ns_a, d.kernel_ns_b, true);
  line("kernels", d.kernels_a, d.kernels_b, false);
  Table("Kernels by GPU time change (B - A)", d.kernels, top, out);
  if (!d.call_sites.empty()) Table("Call sites by GPU time change (B - A)", d.call_sites, top, out);
  WritePcSampleDiffText(d.samples, top, out);
}

void WriteJsonDiff(const TraceDiff& d, std::ostream& out) {
  JsonWriter j(out);
  j.BeginObject().Str("a", d.a).Str("b", d.b);
  j.BeginArray("warnings");
  for (const std::string& w : d.warnings) j.Str({}, w);
  j.EndArray();
  j.BeginObject("totals")
      .UInt("wall_ns_a", d.wall_a)
      .UInt("wall_ns_b", d.wall_b)
      .UInt("kernels_a", d.kernels_a)
      .UInt("kernels_b", d.kernels_b)
      .UInt("kernel_ns_a", d.kernel_ns_a)
      .UInt("kernel_ns_b", d.kernel_ns_b)
      .EndObject();
  for (auto [key, rows] : {std::pair{"kernels", &d.kernels}, {"call_sites", &d.call_sites}}) {
    j.BeginArray(key);
    for (const DiffRow& r : *rows)
      j.BeginObject()
          .Str("name", r.name)
          .UInt("count_a", r.count_a)
          .UInt("count_b", r.count_b)
          .UInt("total_ns_a", r.total_a)
          .UInt("total_ns_b", r.total_b)
          .EndObject();
    j.EndArray();
  }
  if (!d.samples.empty()) PcSampleDiffJson(j, d.samples);
  j.EndObject();
}

namespace {

// One side of a diff: its report and its sampled functions (with all their lines).
struct DiffSide {
  AnalysisReport report;
  std::vector<FunctionSamples> sampled;
};

Status LoadSide(format::TraceSource& source, int i, const LoadOptions& load, bool strict,
                format::ReadReport* damage_out, std::vector<std::string>* warnings,
                DiffSide* side) {
  const std::string name = source.name();
  CompactTrace trace;
  format::ReadReport damage;
  RETURN_IF_ERROR(LoadCompactTrace(source, load, &trace, &damage));
  if (strict) RETURN_IF_ERROR(damage.DamageStatus(name));
  if (!damage.clean())
    warnings->push_back(std::string(i == 0 ? "A" : "B") + ": " + damage.Headline(name) +
                        "; this comparison covers only its readable part");
  if (damage_out) *damage_out = damage;
  side->report = BuildReport(trace, name);
  side->sampled = SampledFunctions(trace.pc_samples(), trace.meta(), SIZE_MAX);
  return OkStatus();
}

TraceDiff Combine(const DiffSide (&sides)[2], std::vector<std::string> warnings) {
  TraceDiff d = DiffReports(sides[0].report, sides[1].report);
  d.samples = DiffPcSamples(sides[0].sampled, sides[1].sampled);
  d.warnings = std::move(warnings);
  return d;
}

}  // namespace

StatusOr<TraceDiff> DiffTraceFiles(const std::string& a, const std::string& b,
                                   const LoadOptions& load, bool strict,
                                   format::ReadReport* damage_a, format::ReadReport* damage_b) {
  DiffSide sides[2];
  std::vector<std::string> warnings;
  const std::string* paths[2] = {&a, &b};
  format::ReadReport* damages[2] = {damage_a, damage_b};
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source,
                     format::OpenFileSource(*paths[i]));
    RETURN_IF_ERROR(LoadSide(*source, i, load, strict, damages[i], &warnings, &sides[i]));
  }
  return Combine(sides, std::move(warnings));
}

StatusOr<TraceDiff> DiffTraceSources(format::TraceSource& a, format::TraceSource& b,
                                     const LoadOptions& load, bool strict,
                                     format::ReadReport* damage_a, format::ReadReport* damage_b) {
  DiffSide sides[2];
  std::vector<std::string> warnings;
  RETURN_IF_ERROR(LoadSide(a, 0, load, strict, damage_a, &warnings, &sides[0]));
  RETURN_IF_ERROR(LoadSide(b, 1, load, strict, damage_b, &warnings, &sides[1]));
  return Combine(sides, std::move(warnings));
}

}  // namespace tracesmith::analysis
