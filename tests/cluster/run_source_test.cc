// RunSource (a run merged on the fly) against MergeTraces (the same run
// merged to a file): the same strings, metadata and event rows, pass after
// pass, and the same MergeResult. Also the in-memory TraceSource against the
// trace written to a file.
#include "tracesmith/cluster/run_source.h"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sstream>

#include "cluster/test_jobs.h"
#include "testing/temp_dir.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/cluster/open_job.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"

namespace tracesmith::cluster {
namespace {

using model::RecordTraits;
using testing::MakeRankTrace;
using testing::RankSpec;
using testing::TempDir;

// Every string, metadata row and event row of a pass over `source`, in pass
// order, as one trace (events appended batch by batch).
model::Trace Drain(format::TraceSource& source) {
  model::Trace all;
  Status st = source.Stream(
      [&](const model::Trace& batch, model::TableKind kind) {
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (RecordTraits<T>::kIsEvent)
            if (RecordTraits<T>::kKind == kind)
              all.Rows<T>().insert(all.Rows<T>().end(), batch.Rows<T>().begin(),
                                   batch.Rows<T>().end());
        });
        return OkStatus();
      },
      [&](const model::Trace& batch) {
        all.strings = batch.strings;
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (!RecordTraits<T>::kIsEvent) all.Rows<T>() = batch.Rows<T>();
        });
        return OkStatus();
      });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return all;
}

// Field by field (rows may have padding), strings by id; the first
// difference, or "" when the traces are the same.
std::string Difference(const model::Trace& a, const model::Trace& b) {
  if (a.strings.size() != b.strings.size())
    return StrFormat("strings: %u vs %u", a.strings.size(), b.strings.size());
  for (uint32_t i = 0; i < a.strings.size(); ++i)
    if (a.strings.Get(i) != b.strings.Get(i)) return StrFormat("string %u differs", i);
  std::string diff;
  model::ForEachRecordType([&]<typename T>() {
    if (!diff.empty()) return;
    const auto &x = a.Rows<T>(), &y = b.Rows<T>();
    if (x.size() != y.size()) {
      diff = StrFormat("%s: %zu vs %zu rows", RecordTraits<T>::kLabel, x.size(), y.size());
      return;
    }
    for (size_t i = 0; i < x.size() && diff.empty(); ++i)
      for (const model::FieldDesc& f : RecordTraits<T>::kAllFields)
        if (model::LoadField(&x[i], f) != model::LoadField(&y[i], f)) {
          diff = StrFormat("%s row %zu: %s differs", RecordTraits<T>::kLabel, i, f.name);
          break;
        }
  });
  return diff;
}

std::vector<std::string> WriteRun(const TempDir& dir, bool same_pid) {
  std::vector<std::string> files;
  for (int r = 0; r < 2; ++r) {
    files.push_back(dir / ("run.rank" + std::to_string(r) + ".sbt"));
    RankSpec spec{.pid = same_pid ? 1000u : 1000u + r, .rank = r, .kernels = 300};
    EXPECT_TRUE(testing::WriteStreamed(MakeRankTrace(spec), files.back()).ok());
  }
  return files;
}

TEST(RunSource, SameRowsAsTheRunMergedToAFilePassAfterPass) {
  for (bool same_pid : {false, true}) {
    SCOPED_TRACE(same_pid ? "one pid in both files" : "a pid per file");
    TempDir dir;
    const std::vector<std::string> files = WriteRun(dir, same_pid);
    auto merged = MergeTraces(files, dir / "merged.sbt");
    ASSERT_TRUE(merged.ok()) << merged.status().ToString();
    auto file = format::ReadTraceFile(dir / "merged.sbt");
    ASSERT_TRUE(file.ok());
    auto source = RunSource::Open(files);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    const model::Trace first = Drain(**source);
    EXPECT_EQ(Difference(first, *file), "");
    EXPECT_EQ(first.Rows<model::Process>().size(), 2u);
    EXPECT_GT(first.Rows<model::KernelEvent>().size(), 500u);
    // A second pass starts afresh: the same rows, the same ids.
    EXPECT_EQ(Difference(Drain(**source), first), "");
    // What the merge did, as MergeTraces says it.
    const MergeResult& r = (*source)->result();
    EXPECT_EQ(r.events, merged->events);
    EXPECT_EQ(r.notes, merged->notes);
    EXPECT_EQ(r.Describe(), merged->Describe());
    ASSERT_EQ(r.inputs.size(), 2u);
    EXPECT_EQ(r.inputs[1].processes[0].out_pid, merged->inputs[1].processes[0].out_pid);
    EXPECT_EQ(r.notes.size(), same_pid ? 1u : 0u);  // the renumbered pid
    EXPECT_EQ((*source)->files(), files);
    EXPECT_TRUE((*source)->report().clean());
  }
}

TEST(RunSource, BeforeAPassTheSurveyTellsPidsDamageAndNotes) {
  TempDir dir;
  const std::vector<std::string> files = WriteRun(dir, /*same_pid=*/true);
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto merged = MergeTraces(files, dir / "merged.sbt");
  ASSERT_TRUE(merged.ok());
  const MergeResult& r = (*source)->result();
  EXPECT_EQ(r.notes, merged->notes);  // pid 1000 of rank 1 renumbered, said before reading
  EXPECT_EQ(r.events, 0u);            // counted by a pass
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[1].processes[0].out_pid, merged->inputs[1].processes[0].out_pid);
  EXPECT_NE(r.inputs[1].processes[0].out_pid, 1000u);
  EXPECT_TRUE(r.inputs[0].damage.clean());
}

TEST(RunSource, AKindFilterLeavesTheOtherKindsUndecoded) {
  TempDir dir;
  const std::vector<std::string> files = WriteRun(dir, false);
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok());
  uint64_t kernels = 0, others = 0;
  ASSERT_TRUE((*source)
                  ->Stream(
                      [&](const model::Trace& batch, model::TableKind kind) {
                        (kind == model::TableKind::kKernel ? kernels : others) +=
                            batch.Rows<model::KernelEvent>().size() +
                            batch.Rows<model::ApiEvent>().size();
                        return OkStatus();
                      },
                      {}, [](model::TableKind k) { return k == model::TableKind::kKernel; })
                  .ok());
  auto file = format::ReadTraceFile(files[0]);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(kernels, 2 * file->Rows<model::KernelEvent>().size());
  EXPECT_EQ(others, 0u);
  // Every string has the id a pass of every kind gives it (a reader that
  // passes again for some kinds joins their rows to the first pass's).
  model::StringTable some, all = Drain(**source).strings;
  const uint64_t whole = (*source)->result().events;  // a pass of every kind counts them all
  ASSERT_TRUE((*source)
                  ->Stream([](const model::Trace&, model::TableKind) { return OkStatus(); },
                           [&](const model::Trace& end) {
                             some = end.strings;
                             return OkStatus();
                           },
                           [](model::TableKind k) { return k == model::TableKind::kPcSample; })
                  .ok());
  ASSERT_EQ(some.size(), all.size());
  for (uint32_t i = 0; i < all.size(); ++i) EXPECT_EQ(some.Get(i), all.Get(i)) << i;
  // A pass of some kinds leaves the counts of the last whole pass.
  EXPECT_GT(whole, kernels);
  EXPECT_EQ((*source)->result().events, whole);
}

TEST(RunSource, ANonTraceInputIsAnErrorAtOpen) {
  TempDir dir;
  std::vector<std::string> files = WriteRun(dir, false);
  ASSERT_TRUE(WriteStringToFile(files[1], "not a trace").ok());
  EXPECT_FALSE(RunSource::Open(files).ok());
}

// An input gone between the survey and a pass: the pass fails, naming it,
// and asking again fails again (a half-started pass used to index past the
// inputs it had opened).
TEST(RunSource, AnInputGoneAfterTheSurveyFailsThePassEachTime) {
  TempDir dir;
  std::vector<std::string> files = WriteRun(dir, false);
  auto source = RunSource::Open(files);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  ASSERT_EQ(::unlink(files[1].c_str()), 0);
  auto cursor = (*source)->Events();
  ASSERT_TRUE(cursor.ok());
  model::TableKind kind;
  for (int i = 0; i < 2; ++i) {
    StatusOr<bool> more = (*cursor)->Next(&kind);
    ASSERT_FALSE(more.ok()) << "call " << i;
    EXPECT_NE(more.status().message().find(files[1]), std::string::npos) << more.status().message();
  }
}

TEST(RunSource, AnOpenedRunReadOnTheFlyWritesNoTemporaryFile) {
  TempDir dir, tmp;
  const std::vector<std::string> files = WriteRun(dir, /*same_pid=*/true);
  const char* old_tmp = getenv("TMPDIR");
  const std::string saved = old_tmp ? old_tmp : "";
  setenv("TMPDIR", tmp.path().c_str(), 1);
  {
    auto run = OpenedRun::Open(std::vector{dir / "run.sbt"}, OpenRunOptions{});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    EXPECT_TRUE(run->merged());
    EXPECT_EQ(run->path(), "");
    ASSERT_NE(run->run_source(), nullptr);
    ASSERT_NE(run->merge_result(), nullptr);
    EXPECT_EQ(run->merge_result()->notes.size(), 1u);  // the renumbered pid, said at open
    auto source = run->source();
    ASSERT_TRUE(source.ok());
    EXPECT_EQ(*source, static_cast<const format::TraceSource*>(run->run_source()));
    model::Trace t;
    ASSERT_TRUE(format::ReadTrace(**source, &t).ok());
    EXPECT_EQ(t.Rows<model::Process>().size(), 2u);
    EXPECT_EQ(run->run_source()->result().events, t.EventCount());
    EXPECT_TRUE(tmp.List().empty());
  }
  if (old_tmp)
    setenv("TMPDIR", saved.c_str(), 1);
  else
    unsetenv("TMPDIR");
}

TEST(MemorySource, SameAnalysisAsTheTraceWrittenToAFile) {
  TempDir dir;
  const model::Trace trace = MakeRankTrace(RankSpec{.kernels = 500});
  ASSERT_TRUE(format::WriteTraceFile(trace, dir / "t.sbt").ok());
  auto memory = format::MemorySource(trace, /*rows_per_batch=*/100);
  EXPECT_EQ(Difference(Drain(*memory), trace), "");
  analysis::CompactTrace a, b;
  ASSERT_TRUE(analysis::LoadCompactTrace(*memory, {}, &a).ok());
  ASSERT_TRUE(analysis::LoadCompactTrace(dir / "t.sbt", {}, &b).ok());
  std::ostringstream ja, jb;
  analysis::WriteJsonReport(analysis::BuildReport(a, "t"), ja);
  analysis::WriteJsonReport(analysis::BuildReport(b, "t"), jb);
  EXPECT_EQ(ja.str(), jb.str());
  EXPECT_GT(a.ops().size(), 400u);
}

}  // namespace
}  // namespace tracesmith::cluster
