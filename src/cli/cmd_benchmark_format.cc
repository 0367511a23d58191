// `tracesmith benchmark format`: SBT size and write/read speed on a realistic
// synthetic trace (model/synthetic.h). Times are medians of repeated runs.
#include <unistd.h>

#include <time.h>
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "tracesmith/base/clock.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::cli {
namespace {

struct FormatBenchOptions {
  uint64_t kernels = 1'000'000;
  int repeats = 3;
  int zstd_level = 3;
  bool verbose = false;
};

int RunFormatBenchmark(const FormatBenchOptions& o) {
  model::SyntheticOptions so;
  so.kernels = o.kernels;
  model::Trace trace = model::MakeSyntheticTrace(so);
  const double events = static_cast<double>(trace.EventCount());
  const double kernels = static_cast<double>(trace.Rows<model::KernelEvent>().size());
  std::string dir = std::filesystem::temp_directory_path().string();
  std::string raw_path = dir + "/tracesmith_bench_" + std::to_string(::getpid()) + ".sbt";
  std::string zstd_path = raw_path + ".zst";

  struct Result {
    double write_s, read_s;
    uint64_t bytes;
  };
  auto measure = [&](const std::string& path, int level) -> StatusOr<Result> {
    std::vector<double> w, r;
    for (int i = 0; i < o.repeats; ++i) {
      double t0 = ThreadCpuSeconds();
      RETURN_IF_ERROR(format::WriteTraceFile(trace, path, {.zstd_level = level}));
      w.push_back(ThreadCpuSeconds() - t0);
      // Read = open + decode every chunk to rows, streaming (as analysis and
      // export read): chunk at a time, so the number is decode speed rather
      // than page-faulting in a 200 MB in-memory copy.
      t0 = ThreadCpuSeconds();
      ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
      uint64_t rows = 0;
      RETURN_IF_ERROR(reader->Stream([&](const model::Trace& batch, model::TableKind) {
        rows += batch.EventCount();
        return OkStatus();
      }));
      r.push_back(ThreadCpuSeconds() - t0);
      if (rows != trace.EventCount())
        return Internal("benchmark read back a different number of events");
    }
    ASSIGN_OR_RETURN(uint64_t bytes, FileSize(path));
    return Result{Median(w), Median(r), bytes};
  };
  auto raw = measure(raw_path, 0);
  auto zst = raw.ok() ? measure(zstd_path, o.zstd_level) : raw;
  std::remove(raw_path.c_str());
  std::remove(zstd_path.c_str());
  if (!raw.ok()) return ReportError(raw.status());
  if (!zst.ok()) return ReportError(zst.status());
  if (o.verbose) {
    std::fprintf(stderr,
                 "events=%.0f (kernels=%.0f + their launch API records, memcpys, syncs, NVTX)\n"
                 "raw:  %.2f MB, write %.3f s, read %.3f s (thread CPU time, medians)\n"
                 "zstd: %.2f MB, write %.3f s (%.1f M events/s), read %.3f s (%.1f M events/s)\n",
                 events, kernels, raw->bytes / 1e6, raw->write_s, raw->read_s, zst->bytes / 1e6,
                 zst->write_s, events / zst->write_s / 1e6, zst->read_s,
                 events / zst->read_s / 1e6);
  }
  std::printf(
      "bytes_per_kernel_event=%.2f bytes_per_kernel_event_zstd=%.2f write_events_per_s=%.0f "
      "read_events_per_s=%.0f\n",
      raw->bytes / kernels, zst->bytes / kernels, events / raw->write_s, events / raw->read_s);
  return kExitOk;
}

}  // namespace

void AddBenchmarkFormatCommand(Cmd& bench, CommandList& commands) {
  auto* cmd = bench.add_subcommand(
      "format", "SBT bytes per kernel event (raw and zstd) and write/read events per second");
  auto o = std::make_shared<FormatBenchOptions>();
  cmd->add_option("--events", o->kernels, "Kernel events in the synthetic trace")
      ->default_val(1'000'000);
  cmd->add_option("--repeats", o->repeats, "Timed repetitions (median reported)")->default_val(3);
  cmd->add_option("--zstd-level", o->zstd_level, "zstd level for the compressed figure")
      ->default_val(3);
  cmd->add_flag("-v,--verbose", o->verbose, "Also print sizes and zstd speeds to stderr");
  commands.emplace_back(cmd, [o] { return RunFormatBenchmark(*o); });
}

}  // namespace tracesmith::cli
