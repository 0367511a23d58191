// `tracesmith benchmark merge [--ranks N] [--kernels K]`: the throughput and
// peak memory of `tracesmith merge` on a synthetic run of N per-rank traces
// (model/synthetic.h, each with its own pid, rank and clock anchors, written
// in batches to a temporary directory; not measured). The merge runs as a
// child process of this binary, as a user runs it, and the line
//   command=merge ranks=<n> events=<total> input_mb=<..> output_mb=<..>
//   seconds=<wall> events_per_s=<..> peak_rss_mb=<ru_maxrss>
// says how it went; peak RSS is the child's own (wait4).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::cli {
namespace {

struct MergeBenchOptions {
  uint32_t ranks = 4;
  uint64_t kernels = 480'000;  // per rank: about 1M events with their API calls
  std::string keep;            // keep the generated run here
};

// Rank r's trace: the synthetic generator's rows, its process given a rank
// and a host as a torchrun capture records them.
StatusOr<uint64_t> WriteRank(const MergeBenchOptions& o, uint32_t rank, const std::string& path) {
  model::SyntheticOptions so;
  so.kernels = o.kernels;
  so.pid = 1000 + rank;
  so.seed = rank + 1;
  model::SyntheticTraceGenerator gen(so);
  ASSIGN_OR_RETURN(auto writer, format::SbtWriter::Open(path));
  writer->AdoptStrings(gen.strings());
  const uint32_t host = writer->InternString("bench-host");
  model::Trace batch;
  uint64_t events = 0;
  while (gen.Next(&batch)) {
    for (model::Process& p : batch.Rows<model::Process>()) {
      p.rank = static_cast<int32_t>(rank);
      p.hostname_id = host;
    }
    events += batch.EventCount();
    model::ForEachRecordType([&]<typename T>() {
      auto& rows = batch.Rows<T>();
      writer->AppendRows(rows.data(), rows.size());
      rows.clear();
    });
    RETURN_IF_ERROR(writer->status());
  }
  RETURN_IF_ERROR(writer->Close());
  return events;
}

int RunMergeBench(const MergeBenchOptions& o) {
  if (o.ranks == 0) return ReportError(InvalidArgument("--ranks must be at least 1"));
  std::string dir = o.keep;
  bool remove = false;
  if (dir.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "tracesmith-mergebench-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return ReportError(IoError("mkdtemp failed"));
    dir = pattern;
    remove = true;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  uint64_t events = 0, input_bytes = 0;
  for (uint32_t r = 0; r < o.ranks; ++r) {
    const std::string path = dir + "/run.rank" + std::to_string(r) + ".sbt";
    auto n = WriteRank(o, r, path);
    if (!n.ok()) return ReportError(n.status());
    events += *n;
    auto size = FileSize(path);
    input_bytes += size.ok() ? *size : 0;
  }
  const std::string out = dir + "/job.sbt";
  std::vector<std::string> args = {"merge", dir + "/run.sbt", "-o", out, "--force", "-q"};
  std::vector<char*> argv = {const_cast<char*>("tracesmith")};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) return ReportError(IoError("fork failed"));
  if (pid == 0) {
    ::execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid) return ReportError(IoError("wait4 failed"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto out_size = FileSize(out);
  const uint64_t output_bytes = out_size.ok() ? *out_size : 0;
  std::printf(
      "command=merge ranks=%u events=%llu input_mb=%.1f output_mb=%.1f seconds=%.2f "
      "events_per_s=%.0f peak_rss_mb=%.1f%s\n",
      o.ranks, static_cast<unsigned long long>(events), input_bytes / 1e6, output_bytes / 1e6,
      seconds, events / seconds, usage.ru_maxrss / 1024.0,
      code == 0 ? "" : StrFormat(" exit=%d", code).c_str());
  if (remove) std::filesystem::remove_all(dir);
  return code == 0 ? kExitOk : kExitError;
}

}  // namespace

void AddBenchmarkMergeCommand(Cmd& benchmark, CommandList& commands) {
  auto* cmd = benchmark.add_subcommand(
      "merge", "Time and peak memory of `merge` on a synthetic run of per-rank traces");
  auto o = std::make_shared<MergeBenchOptions>();
  cmd->add_option("--ranks", o->ranks, "Traces in the run")->default_val(4);
  cmd->add_option("--kernels", o->kernels,
                  "Kernels per rank (each with its launch call: about 2.05 events per kernel)")
      ->default_val(480'000);
  cmd->add_option("--keep", o->keep, "Write the run (run.rank<N>.sbt, job.sbt) here and keep it");
  commands.emplace_back(cmd, [o] { return RunMergeBench(*o); });
}

}  // namespace tracesmith::cli
