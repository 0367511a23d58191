// `tracesmith benchmark export [--events N]`: exporter speed and size on the
// realistic synthetic trace (model/synthetic.h), per format:
//   format=<f> events_per_s=<n> bytes_per_kernel_event=<b>
// events_per_s: all events of the trace (kernels, their launch calls, copies,
// syncs, NVTX) over the median thread CPU time (user + system, so the
// write() calls count) of ExportTrace from memory to a file in the temp
// directory. CPU time, not wall time: the build machines are shared, and
// the lead's format benchmark measures the same way. -v adds wall time. bytes_per_kernel_event: for
// perfetto, bytes of the packets written while exporting kernels (BEGIN, END, interning; their
// launch calls and flows' source side not included) over kernels; for the
// text formats, file size over kernels of a kernel-only trace.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/export/export.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::cli {
namespace {

struct ExportBenchOptions {
  uint64_t kernels = 1'000'000;
  int repeats = 3;
  std::vector<std::string> formats = {"perfetto", "json", "sqlite", "csv"};
  bool verbose = false;
};

int RunExportBenchmark(const ExportBenchOptions& o) {
  model::SyntheticOptions so;
  so.kernels = o.kernels;
  model::Trace trace = model::MakeSyntheticTrace(so);
  // The same kernels alone, for the per-kernel size of the text formats.
  model::Trace kernels_only;
  kernels_only.strings = trace.strings;
  kernels_only.Rows<model::KernelEvent>() = trace.Rows<model::KernelEvent>();
  kernels_only.Rows<model::Device>() = trace.Rows<model::Device>();
  kernels_only.Rows<model::Process>() = trace.Rows<model::Process>();
  const double kernels = static_cast<double>(trace.Rows<model::KernelEvent>().size());
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tracesmith_bench_export_" + std::to_string(::getpid())))
                               .string();
  for (const std::string& name : o.formats) {
    auto format = exporter::ParseExportFormat(name);
    if (!format.ok()) return ReportError(format.status());
    std::vector<double> times, walls;
    exporter::ExportStats stats;
    for (int i = 0; i < o.repeats; ++i) {
      // Every repetition writes a new file, as the first does: truncating
      // the previous one (freeing its page cache) is not export work.
      std::remove(path.c_str());
      auto t0 = std::chrono::steady_clock::now();
      double c0 = ThreadCpuSeconds();
      auto s = exporter::ExportTrace(trace, *format, path);
      times.push_back(ThreadCpuSeconds() - c0);
      walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!s.ok()) {
        std::remove(path.c_str());
        return ReportError(s.status());
      }
      stats = *s;
    }
    double seconds = Median(times);
    double per_kernel = 0;
    if (*format == exporter::ExportFormat::kPerfetto) {
      per_kernel = static_cast<double>(stats.kernel_bytes) / kernels;
    } else {
      auto s = exporter::ExportTrace(kernels_only, *format, path);
      if (!s.ok()) return ReportError(s.status());
      per_kernel = static_cast<double>(s->bytes) / kernels;
    }
    std::remove(path.c_str());
    if (o.verbose)
      std::fprintf(stderr, "%s: %.0f events, cpu %.3f s, wall %.3f s, %.1f MB, %llu flows\n",
                   name.c_str(), static_cast<double>(stats.events), seconds, Median(walls),
                   static_cast<double>(stats.bytes) / 1e6,
                   static_cast<unsigned long long>(stats.flows));
    std::printf("format=%s events_per_s=%.0f bytes_per_kernel_event=%.2f\n", name.c_str(),
                static_cast<double>(stats.events) / seconds, per_kernel);
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

void AddBenchmarkExportCommand(Cmd& bench, CommandList& commands) {
  auto* cmd = bench.add_subcommand(
      "export", "Exporter events per second and bytes per kernel event, per format");
  auto o = std::make_shared<ExportBenchOptions>();
  cmd->add_option("--events", o->kernels, "Kernel events in the synthetic trace")
      ->default_val(1'000'000);
  cmd->add_option("--repeats", o->repeats, "Timed repetitions (median reported)")->default_val(3);
  cmd->add_option("--formats", o->formats, "Formats to measure")->delimiter(',');
  cmd->add_flag("-v,--verbose", o->verbose, "Also print CPU/wall seconds and sizes to stderr");
  commands.emplace_back(cmd, [o] { return RunExportBenchmark(*o); });
}

}  // namespace tracesmith::cli
