// `tracesmith benchmark analyze`: the full analysis of a large synthetic
// trace, read from an SBT file. The trace is generated in batches straight
// to a temporary file first (not timed), so memory holds at most one batch
// of rows; the timed part streams the file into the analysis engine and
// builds the whole report (timeline, state machines, critical path, tables).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "synthetic_file.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/statistics.h"

namespace tracesmith::cli {
namespace {

struct AnalyzeBenchOptions {
  uint64_t events = 10'000'000;
  int repeats = 1;
  bool verbose = false;
};

// Events the generator emits per kernel with its default options: the
// kernel and its launch call, a memcpy and its call every 50 kernels, a
// sync and its call every 400, an NVTX range every 100.
constexpr double kEventsPerKernel = 2.0 + 2.0 / 50 + 2.0 / 400 + 1.0 / 100;

double CpuSeconds() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double PeakRssMb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // ru_maxrss is in KiB on Linux
}

int RunAnalyzeBenchmark(const AnalyzeBenchOptions& o) {
  const uint64_t kernels =
      std::max<uint64_t>(1, static_cast<uint64_t>(double(o.events) / kEventsPerKernel));
  std::string path = (std::filesystem::temp_directory_path() /
                      ("tracesmith_bench_analyze_" + std::to_string(::getpid()) + ".sbt"))
                         .string();
  auto t0 = std::chrono::steady_clock::now();
  model::SyntheticOptions so;
  so.kernels = kernels;
  Status st = WriteSyntheticTraceFile(so, path);
  const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    std::remove(path.c_str());
    return ReportError(st);
  }
  std::vector<double> times;
  uint64_t events = 0;
  size_t findings = 0;
  for (int i = 0; i < std::max(1, o.repeats); ++i) {
    t0 = std::chrono::steady_clock::now();
    const double cpu0 = CpuSeconds();
    analysis::CompactTrace trace;
    st = analysis::LoadCompactTrace(path, {}, &trace);
    if (!st.ok()) break;
    const double load_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    analysis::AnalysisReport report = analysis::BuildReport(trace, path);
    if (o.verbose) {
      std::fprintf(stderr, "run %d: read+ingest %.3f s, finalize %.3f s", i,
                   load_s - trace.stats().finalize_seconds, trace.stats().finalize_seconds);
      for (auto& [name, s] : report.phase_seconds)
        std::fprintf(stderr, ", %s %.3f s", name.c_str(), s);
      std::fprintf(stderr, "\n");
    }
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (o.verbose) std::fprintf(stderr, "run %d: cpu %.3f s (user+sys)\n", i, CpuSeconds() - cpu0);
    events = trace.stats().events_ingested;
    findings = report.findings.size();
  }
  std::remove(path.c_str());
  if (!st.ok()) return ReportError(st);
  if (o.verbose)
    std::fprintf(stderr, "kernels=%llu generation_seconds=%.2f (not timed) findings=%zu runs=%zu\n",
                 static_cast<unsigned long long>(kernels), gen_s, findings, times.size());
  std::printf("events=%llu seconds=%.3f peak_rss_mb=%.0f\n",
              static_cast<unsigned long long>(events), Median(times), PeakRssMb());
  return kExitOk;
}

}  // namespace

void AddBenchmarkAnalyzeCommand(Cmd& bench, CommandList& commands) {
  auto* cmd = bench.add_subcommand(
      "analyze",
      "Full analysis (read + report) of a synthetic trace streamed from an SBT file; prints "
      "events, seconds (median; trace generation not included) and peak RSS");
  auto o = std::make_shared<AnalyzeBenchOptions>();
  cmd->add_option("--events", o->events, "Events in the synthetic trace (all kinds)")
      ->default_val(10'000'000);
  cmd->add_option("--repeats", o->repeats, "Timed repetitions (median reported)")->default_val(1);
  cmd->add_flag("-v,--verbose", o->verbose, "Also print generation time and kernel count");
  commands.emplace_back(cmd, [o] { return RunAnalyzeBenchmark(*o); });
}

}  // namespace tracesmith::cli
