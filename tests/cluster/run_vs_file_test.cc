// The run-vs-file test of every consumer that takes a format::TraceSource:
// a synthetic 2-rank run read on the fly (RunSource) gives the same output as
// the same run merged to a file by MergeTraces and read from it.
#include <gtest/gtest.h>

#include <sstream>

#include "cluster/test_jobs.h"
#include "testing/launch_sample_trace.h"
#include "testing/synthetic_job_files.h"
#include "testing/temp_dir.h"
#include "tracesmith/analysis/ascii_timeline.h"
#include "tracesmith/analysis/diff.h"
#include "tracesmith/analysis/event_filter.h"
#include "tracesmith/analysis/kernel_page.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/run_source.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/synthetic_job.h"
#include "tracesmith/report/flame.h"
#include "tracesmith/report/html_report.h"

namespace tracesmith::cluster {
namespace {

using testing::TempDir;

struct Run {
  TempDir dir;
  std::vector<std::string> files;
  std::string merged;
  std::unique_ptr<RunSource> source;
};

// `straggler_ns`: rank 1's extra compute per step (another run to diff against).
std::unique_ptr<Run> MakeRun(uint64_t straggler_ns = 0) {
  auto run = std::make_unique<Run>();
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 1);
  o.steps = 6;
  o.compute_kernels = 4;
  o.ranks[1].delay_per_step_ns = straggler_ns;
  const model::SyntheticJob job(o);
  run->files = testing::WriteRanks(job, run->dir);
  run->merged = run->dir / "merged.sbt";
  auto merged = MergeTraces(run->files, run->merged);
  EXPECT_TRUE(merged.ok()) << merged.status().ToString();
  auto source = RunSource::Open(run->files);
  EXPECT_TRUE(source.ok()) << source.status().ToString();
  if (source.ok()) run->source = std::move(*source);
  return run;
}

std::string AnalyzeJson(analysis::CompactTrace& trace) {
  std::ostringstream out;
  analysis::WriteJsonReport(analysis::BuildReport(trace, "run"), out);
  return out.str();
}

TEST(RunVsFile, Analyze) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  analysis::CompactTrace a, b;
  format::ReadReport damage;
  ASSERT_TRUE(analysis::LoadCompactTrace(*run->source, {}, &a, &damage).ok());
  EXPECT_TRUE(damage.clean());
  ASSERT_TRUE(analysis::LoadCompactTrace(run->merged, {}, &b).ok());
  EXPECT_GT(a.ops().size(), 40u);
  EXPECT_EQ(AnalyzeJson(a), AnalyzeJson(b));
  // With the default window and steady-state steps, as `analyze` loads.
  analysis::LoadOptions steady{.active_region = true, .steady_state = true};
  analysis::CompactTrace c, d;
  ASSERT_TRUE(analysis::LoadCompactTrace(*run->source, steady, &c).ok());
  ASSERT_TRUE(analysis::LoadCompactTrace(run->merged, steady, &d).ok());
  EXPECT_EQ(AnalyzeJson(c), AnalyzeJson(d));
}

TEST(RunVsFile, KernelPageAndLaunchPage) {
  // A run of two captures with GPU instruction samples (the second's pids
  // renumbered: both files have pids 100 and 200).
  TempDir dir;
  const std::vector<std::string> files = {dir / "k.rank0.sbt", dir / "k.rank1.sbt"};
  for (const std::string& f : files)
    ASSERT_TRUE(format::WriteTraceFile(testing::LaunchSampleTrace(), f).ok());
  ASSERT_TRUE(MergeTraces(files, dir / "merged.sbt").ok());
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok());
  analysis::CompactTrace a, b;
  ASSERT_TRUE(analysis::LoadCompactTrace(**source, {}, &a).ok());
  ASSERT_TRUE(analysis::LoadCompactTrace(dir / "merged.sbt", {}, &b).ok());
  auto pa = analysis::BuildKernelPage(a, "hotK()", {});
  auto pb = analysis::BuildKernelPage(b, "hotK()", {});
  ASSERT_TRUE(pa.ok()) << pa.status().ToString();
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  std::ostringstream ja, jb;
  analysis::WriteKernelPageJson(*pa, ja);
  analysis::WriteKernelPageJson(*pb, jb);
  EXPECT_EQ(ja.str(), jb.str());
  // One launch: the source (or the file) read again for its drain windows.
  const analysis::LaunchQuery launch{11, 100u, ""};
  auto la = analysis::BuildLaunchPage(a, **source, launch, {});
  auto lb = analysis::BuildLaunchPage(b, dir / "merged.sbt", launch, {});
  ASSERT_TRUE(la.ok()) << la.status().ToString();
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  ASSERT_TRUE(la->launch.has_value());
  EXPECT_EQ(la->launch->samples, 120u);
  std::ostringstream ka, kb;
  analysis::WriteKernelPageJson(*la, ka);
  analysis::WriteKernelPageJson(*lb, kb);
  EXPECT_EQ(ka.str(), kb.str());
}

TEST(RunVsFile, ExportEveryFormat) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  using exporter::ExportFormat;
  for (ExportFormat f : {ExportFormat::kPerfetto, ExportFormat::kJson, ExportFormat::kSqlite,
                         ExportFormat::kCsv, ExportFormat::kDot}) {
    SCOPED_TRACE(exporter::ExportFormatName(f));
    const std::string a =
        run->dir / (std::string("fly") + exporter::ExportFormatExtension(f, false));
    const std::string b =
        run->dir / (std::string("file") + exporter::ExportFormatExtension(f, false));
    auto sa = exporter::ExportSource(*run->source, f, a);
    ASSERT_TRUE(sa.ok()) << sa.status().ToString();
    auto sb = exporter::ExportSbtFile(run->merged, f, b);
    ASSERT_TRUE(sb.ok()) << sb.status().ToString();
    EXPECT_EQ(sa->events, sb->events);
    EXPECT_EQ(sa->flows, sb->flows);
    auto ba = ReadFileToString(a), bb = ReadFileToString(b);
    ASSERT_TRUE(ba.ok() && bb.ok());
    EXPECT_GT(ba->size(), 100u);
    EXPECT_TRUE(*ba == *bb) << a << " (" << ba->size() << " bytes) differs from " << b << " ("
                            << bb->size() << " bytes)";
  }
  // One process of the run, as `export --pid` would.
  exporter::ExportOptions one;
  auto t = format::ReadTraceFile(run->merged);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->Rows<model::Process>().size(), 2u);
  one.only_pid = t->Rows<model::Process>()[1].pid;
  ASSERT_TRUE(
      exporter::ExportSource(*run->source, ExportFormat::kJson, run->dir / "a1.json", one).ok());
  ASSERT_TRUE(
      exporter::ExportSbtFile(run->merged, ExportFormat::kJson, run->dir / "b1.json", one).ok());
  auto a1 = ReadFileToString(run->dir / "a1.json"), b1 = ReadFileToString(run->dir / "b1.json");
  ASSERT_TRUE(a1.ok() && b1.ok());
  EXPECT_GT(a1->size(), 100u);
  EXPECT_TRUE(*a1 == *b1);
}

// Kineto JSON of a run whose inputs each hold more events than the export's
// time-ordering window, so that it overflows (its output then depends on the
// chunks read and their order: flows written backwards are left out): the run
// read on the fly and the same run merged to a file give the same export,
// flows and all, as the file's chunks are the run's batches in the run's
// order. (A file merged in chunks of its own gave another order and other
// flows.)
TEST(RunVsFile, KinetoJsonPastTheReorderWindow) {
  TempDir dir;
  model::SyntheticJobOptions o = model::MakeSyntheticJobOptions(2, 1);
  o.steps = 400;
  const model::SyntheticJob job(o);
  std::vector<std::string> files;
  uint64_t per_rank = UINT64_MAX;
  for (uint32_t r = 0; r < 2; ++r) {
    files.push_back(dir / ("run.rank" + std::to_string(r) + ".sbt"));
    const model::Trace t = job.RankTrace(r);
    uint64_t events = 0;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (model::RecordTraits<T>::kIsEvent) events += t.Rows<T>().size();
    });
    per_rank = std::min(per_rank, events);
    // Small chunks, as a long capture has many.
    ASSERT_TRUE(format::WriteTraceFile(t, files.back(), {.rows_per_chunk = 256}).ok());
  }
  const std::string merged = dir / "merged.sbt";
  ASSERT_TRUE(MergeTraces(files, merged).ok());
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  exporter::ExportOptions window;
  window.max_buffered_events = 4096;
  ASSERT_GT(per_rank, 2 * window.max_buffered_events);
  auto sa =
      exporter::ExportSource(**source, exporter::ExportFormat::kJson, dir / "fly.json", window);
  ASSERT_TRUE(sa.ok()) << sa.status().ToString();
  auto sb =
      exporter::ExportSbtFile(merged, exporter::ExportFormat::kJson, dir / "file.json", window);
  ASSERT_TRUE(sb.ok()) << sb.status().ToString();
  EXPECT_EQ(sa->events, sb->events);
  EXPECT_GT(sa->flows, 0u);
  EXPECT_EQ(sa->flows, sb->flows);
  auto a = ReadFileToString(dir / "fly.json"), b = ReadFileToString(dir / "file.json");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(*a == *b) << "the run's export (" << a->size() << " bytes) differs from its merged "
                        << "file's (" << b->size() << " bytes)";
}

TEST(RunVsFile, Timeline) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  for (const char* to : {"", "30ms"}) {
    SCOPED_TRACE(to);
    analysis::AsciiTimelineFileOptions o;
    o.timeline.width = 100;
    o.to = to;
    std::string a, b;
    ASSERT_TRUE(analysis::RenderAsciiTimelineFile(*run->source, o, &a).ok());
    ASSERT_TRUE(analysis::RenderAsciiTimelineFile(run->merged, o, &b).ok());
    EXPECT_GT(a.size(), 200u);
    EXPECT_EQ(a, b);
  }
}

TEST(RunVsFile, Memory) {
  // Ranks that allocate (one allocation per 20 kernels), pids 1000 and 1001.
  TempDir dir;
  std::vector<std::string> files;
  for (int r = 0; r < 2; ++r) {
    files.push_back(dir / ("m.rank" + std::to_string(r) + ".sbt"));
    ASSERT_TRUE(
        testing::WriteStreamed(
            testing::MakeRankTrace({.pid = 1000u + r, .rank = r, .kernels = 400}), files.back())
            .ok());
  }
  ASSERT_TRUE(MergeTraces(files, dir / "merged.sbt").ok());
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok());
  for (bool steps : {false, true}) {
    SCOPED_TRACE(steps ? "with steps" : "without steps");
    analysis::MemoryReportOptions o;
    o.steps = steps;
    analysis::MemoryReport a, b;
    ASSERT_TRUE(analysis::BuildMemoryReport(**source, o, &a).ok());
    ASSERT_TRUE(analysis::BuildMemoryReport(dir / "merged.sbt", o, &b).ok());
    a.source = b.source = "run";
    EXPECT_EQ(a.keys.size(), 4u);  // 2 processes x 2 devices
    std::ostringstream ja, jb;
    analysis::WriteMemoryJson(a, ja);
    analysis::WriteMemoryJson(b, jb);
    EXPECT_EQ(ja.str(), jb.str());
  }
}

TEST(RunVsFile, HtmlReportAndFoldedStacks) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  report::HtmlReportOptions o;
  o.run_files = run->files;  // the cross-rank part reads the ranks, as `report` does
  auto a = report::BuildHtmlReport(*run->source, "run", o);
  auto b = report::BuildHtmlReport(run->merged, "run", o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_GT(a->size(), 10000u);
  EXPECT_TRUE(*a == *b) << "the pages differ";
  for (report::FlameWeight w : {report::FlameWeight::kGpuTime, report::FlameWeight::kLaunches}) {
    const std::string fa = run->dir / "a.folded", fb = run->dir / "b.folded";
    auto sa = report::WriteFoldedFile(*run->source, fa, w);
    auto sb = report::WriteFoldedFile(run->merged, fb, w);
    ASSERT_TRUE(sa.ok() && sb.ok());
    EXPECT_GT(sa->lines, 0u);
    auto ta = ReadFileToString(fa), tb = ReadFileToString(fb);
    ASSERT_TRUE(ta.ok() && tb.ok());
    EXPECT_EQ(*ta, *tb);
  }
}

TEST(RunVsFile, ViewAndViewStats) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  // `view` holds the whole trace: the same rows as the merged file's.
  model::Trace a;
  ASSERT_TRUE(format::ReadTrace(*run->source, &a).ok());
  auto b = format::ReadTraceFile(run->merged);
  ASSERT_TRUE(b.ok());
  EXPECT_GT(a.Rows<model::KernelEvent>().size(), 40u);
  ASSERT_EQ(a.strings.size(), b->strings.size());
  for (uint32_t i = 0; i < a.strings.size(); ++i) EXPECT_EQ(a.strings.Get(i), b->strings.Get(i));
  model::ForEachRecordType([&]<typename T>() {
    EXPECT_EQ(a.Rows<T>().size(), b->Rows<T>().size()) << model::RecordTraits<T>::kLabel;
  });
  std::ostringstream sa, sb;
  for (const model::KernelEvent& k : a.Rows<model::KernelEvent>())
    sa << k.start_ns << ' ' << k.end_ns << ' ' << k.pid << ' ' << a.strings.Get(k.name_id) << '\n';
  for (const model::KernelEvent& k : b->Rows<model::KernelEvent>())
    sb << k.start_ns << ' ' << k.end_ns << ' ' << k.pid << ' ' << b->strings.Get(k.name_id) << '\n';
  EXPECT_EQ(sa.str(), sb.str());
  // `view --stats`, with a name, kind and window filter.
  analysis::EventFilterSpec spec{
      .kinds = {"kernel", "api"}, .name_regex = "gemm|Launch", .to = "40ms"};
  auto fa = analysis::EventFilter::Make(spec), fb = analysis::EventFilter::Make(spec);
  ASSERT_TRUE(fa.ok() && fb.ok());
  auto reader = format::SbtReader::Open(run->merged);
  ASSERT_TRUE(reader.ok());
  auto ea = analysis::StreamEventStats(*run->source, std::move(*fa));
  auto eb = analysis::StreamEventStats(**reader, std::move(*fb));
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_GT(ea->matched, 0u);
  EXPECT_EQ(ea->matched, eb->matched);
  EXPECT_EQ(ea->per_kind, eb->per_kind);
  ASSERT_EQ(ea->per_name.size(), eb->per_name.size());
  for (size_t i = 0; i < ea->per_name.size(); ++i) {
    EXPECT_EQ(ea->per_name[i].name, eb->per_name[i].name);
    EXPECT_EQ(ea->per_name[i].total_ns, eb->per_name[i].total_ns);
  }
}

TEST(RunVsFile, Diff) {
  auto base = MakeRun(), slow = MakeRun(/*straggler_ns=*/300'000);
  ASSERT_TRUE(base->source && slow->source);
  auto a = analysis::DiffTraceSources(*base->source, *slow->source, {}, false);
  auto b = analysis::DiffTraceFiles(base->merged, slow->merged, {}, false);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  a->a = b->a = "base";
  a->b = b->b = "slow";
  EXPECT_FALSE(a->kernels.empty());
  std::ostringstream ja, jb;
  analysis::WriteJsonDiff(*a, ja);
  analysis::WriteJsonDiff(*b, jb);
  EXPECT_EQ(ja.str(), jb.str());
}

TEST(RunVsFile, ExportRefusesAnInputAsOutput) {
  auto run = MakeRun();
  ASSERT_TRUE(run->source);
  EXPECT_FALSE(
      exporter::ExportSource(*run->source, exporter::ExportFormat::kCsv, run->files[1]).ok());
}

}  // namespace
}  // namespace tracesmith::cluster
