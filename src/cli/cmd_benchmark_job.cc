// `tracesmith benchmark job`: the cross-rank analysis of a synthetic
// distributed job (model/synthetic_job.h), one SBT file per rank.
// The files are written first by a child process (not timed, and its memory
// is not in the parent's peak RSS); the timed part is AnalyzeJob: each rank
// read, streaming, into a summary one at a time, then the cross-rank report
// (and, with --perfetto, the job's Perfetto export). Prints
//   ranks=<n> file_mb=<all ranks> kernels_per_rank=<..> collectives=<matched>
//   seconds=<analysis> [perfetto_seconds=<..>] peak_rss_mb=<ru_maxrss>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "tracesmith/export/job_export.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/model/synthetic_job.h"

namespace tracesmith::cli {
namespace {

struct JobBenchOptions {
  uint32_t ranks = 64;
  uint32_t ranks_per_host = 8;
  uint32_t steps = 50;
  uint32_t compute_kernels = 200;
  bool perfetto = false;
  bool report = false;
  std::string keep;  // --keep DIR: write the rank files there and leave them
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int RunJobBenchmark(const JobBenchOptions& o) {
  namespace fs = std::filesystem;
  const fs::path dir = !o.keep.empty() ? fs::path(o.keep)
                                       : fs::temp_directory_path() /
                                             ("tracesmith_bench_job_" + std::to_string(::getpid()));
  std::error_code ec;
  if (!o.keep.empty() && fs::exists(dir) && !fs::is_empty(dir, ec))
    return ReportError(FailedPrecondition("--keep " + dir.string() +
                                          ": the directory is not empty (it would mix runs)"));
  fs::create_directories(dir, ec);
  if (ec) return ReportError(Internal("cannot create " + dir.string() + ": " + ec.message()));
  model::SyntheticJobOptions so = model::MakeSyntheticJobOptions(o.ranks, o.ranks_per_host);
  so.steps = o.steps;
  so.compute_kernels = o.compute_kernels;
  if (o.ranks > 3) so.ranks[3].delay_per_step_ns = 500'000;  // a straggler to find
  std::vector<std::string> files;
  for (uint32_t r = 0; r < o.ranks; ++r)
    files.push_back((dir / ("job.rank" + std::to_string(r) + ".sbt")).string());
  // Generation in a child: its memory stays out of the measured peak.
  const pid_t child = ::fork();
  if (child == 0) {
    const model::SyntheticJob job(so);
    for (uint32_t r = 0; r < o.ranks; ++r)
      if (!format::WriteTraceFile(job.RankTrace(r), files[r]).ok()) ::_exit(1);
    ::_exit(0);
  }
  int wstatus = 0;
  if (child < 0 || ::waitpid(child, &wstatus, 0) != child || !WIFEXITED(wstatus) ||
      WEXITSTATUS(wstatus) != 0) {
    fs::remove_all(dir, ec);
    return ReportError(
        Internal("writing the synthetic job's rank files in " + dir.string() + " failed"));
  }
  uint64_t bytes = 0;
  for (const std::string& f : files) bytes += fs::file_size(f, ec);

  auto t0 = std::chrono::steady_clock::now();
  auto report = analysis::AnalyzeJob(files, {});
  const double analyze_s = Seconds(t0);
  double export_s = 0;
  Status st = report.status();
  if (st.ok() && o.perfetto) {
    t0 = std::chrono::steady_clock::now();
    auto ex = exporter::ExportJobPerfetto(files, (dir / "job.pftrace").string());
    export_s = Seconds(t0);
    st = ex.status();
  }
  if (o.keep.empty()) fs::remove_all(dir, ec);
  if (!st.ok()) return ReportError(st);
  if (!o.keep.empty())
    std::fprintf(stderr, "tracesmith: the job's rank files are in %s (job.rank*.sbt)\n",
                 dir.c_str());
  if (o.report) analysis::WriteJobText(*report, std::cout);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("ranks=%u file_mb=%.2f kernels_per_rank=%u collectives=%zu seconds=%.3f", o.ranks,
              double(bytes) / 1e6, o.steps * (o.compute_kernels + 3), report->collectives.size(),
              analyze_s);
  if (o.perfetto) std::printf(" perfetto_seconds=%.3f", export_s);
  std::printf(" peak_rss_mb=%.0f\n", double(ru.ru_maxrss) / 1024.0);
  return kExitOk;
}

}  // namespace

void AddBenchmarkJobCommand(Cmd& bench, CommandList& commands) {
  auto* cmd = bench.add_subcommand(
      "job",
      "Cross-rank analysis of a synthetic multi-rank job (one SBT file per rank, written first "
      "and not timed); prints seconds and peak RSS");
  auto o = std::make_shared<JobBenchOptions>();
  cmd->add_option("--ranks", o->ranks, "Ranks in the job")->default_val(64);
  cmd->add_option("--ranks-per-host", o->ranks_per_host, "Ranks on each host")->default_val(8);
  cmd->add_option("--steps", o->steps, "Training steps (3 collectives each)")->default_val(50);
  cmd->add_option("--compute-kernels", o->compute_kernels, "Compute kernels per step and rank")
      ->default_val(200);
  cmd->add_flag("--perfetto", o->perfetto, "Also time the job's Perfetto export");
  cmd->add_flag("--report", o->report, "Also print the job report");
  cmd->add_option("--keep", o->keep,
                  "Write the rank files into this (new or empty) directory and keep them: a "
                  "synthetic job to try analyze, merge and export on");
  commands.emplace_back(cmd, [o] { return RunJobBenchmark(*o); });
}

}  // namespace tracesmith::cli
