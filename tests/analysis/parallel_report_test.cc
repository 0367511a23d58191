// BuildReport runs its phases on three threads (the steps beside the correlation indexes;
// then the timeline and critical path, the launch tables, the rest), and LoadCompactTrace reads
// on two (one decodes batches and keeps the metadata, one ingests rows): this binary runs under
// ThreadSanitizer too (label tsan), where a thread writing what another reads fails it. Here:
// every phase timed, the report the same from one run to the next, in both record forms and
// loaded in batches; a read that fails partway returns its error.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tracesmith/analysis/report.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::analysis {
namespace {

std::string ReportJson(const model::Trace& t, RecordForm form, bool loaded = false) {
  CompactTrace c;
  c.SetRecordForm(form);
  if (loaded) {  // in batches of 700 rows, through the two-thread loader
    std::unique_ptr<format::TraceSource> source = format::MemorySource(t, 700);
    EXPECT_TRUE(LoadCompactTrace(*source, {}, &c).ok());
  } else {
    c.IngestAll(t);
    c.Finalize();
  }
  AnalysisReport r = BuildReport(c, "synthetic");
  std::vector<std::string> names;
  for (const auto& [name, seconds] : r.phase_seconds) {
    names.push_back(name);
    EXPECT_GE(seconds, 0.0) << name;
  }
  const std::vector<std::string> want = {"steps",
                                         "timeline",
                                         "critical_path",
                                         "launches",
                                         "copies+graphs",
                                         "correlation indexes",
                                         "waiting for the steps",
                                         "kernels",
                                         "nvtx",
                                         "waiting for the other threads",
                                         "findings"};
  EXPECT_EQ(names, want);
  std::ostringstream out;
  WriteJsonReport(r, out);
  return out.str();
}

TEST(ParallelReport, SameReportEveryRunAndInBothForms) {
  model::SyntheticOptions so;
  so.kernels = 6000;
  so.seed = 11;
  const model::Trace t = model::MakeSyntheticTrace(so);
  const std::string first = ReportJson(t, RecordForm::kArrays);
  ASSERT_NE(first.find("\"kernels\""), std::string::npos);
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(ReportJson(t, RecordForm::kArrays), first) << "run " << run;
    EXPECT_EQ(ReportJson(t, RecordForm::kPacked), first) << "run " << run;
    EXPECT_EQ(ReportJson(t, RecordForm::kPacked, true), first) << "run " << run;
  }
}

// A source whose pass fails after `good` batches (a decode limit hit partway).
class FailingSource final : public format::TraceSource {
 public:
  FailingSource(const model::Trace& t, int good)
      : inner_(format::MemorySource(t, 500)), good_(good) {}
  StatusOr<std::unique_ptr<Cursor>> Events(const format::SbtReader::EventKindFilter& w) override {
    ASSIGN_OR_RETURN(std::unique_ptr<Cursor> inner, inner_->Events(w));
    return std::unique_ptr<Cursor>(new FailingCursor(std::move(inner), good_));
  }
  std::vector<format::ChunkIndexEntry> TableChunks() const override {
    return inner_->TableChunks();
  }
  std::string name() const override { return "failing"; }
  uint64_t bytes() const override { return 0; }
  std::vector<std::string> files() const override { return {}; }
  format::ReadReport report() const override { return inner_->report(); }

 private:
  class FailingCursor final : public Cursor {
   public:
    FailingCursor(std::unique_ptr<Cursor> inner, int good)
        : inner_(std::move(inner)), left_(good) {}
    StatusOr<bool> Next(model::TableKind* kind) override {
      if (left_-- == 0) return DataLoss("decode budget spent");
      return inner_->Next(kind);
    }
    const model::Trace& batch() const override { return inner_->batch(); }

   private:
    std::unique_ptr<Cursor> inner_;
    int left_;
  };
  std::unique_ptr<format::TraceSource> inner_;
  int good_;
};

TEST(ParallelLoad, AReadFailingPartwayReturnsItsError) {
  model::SyntheticOptions so;
  so.kernels = 6000;
  const model::Trace t = model::MakeSyntheticTrace(so);
  for (int good : {0, 1, 2, 5, 17}) {
    FailingSource source(t, good);
    CompactTrace c;
    const Status st = LoadCompactTrace(source, {}, &c);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss) << good;
    EXPECT_NE(st.message().find("decode budget spent"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("failing: "), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace tracesmith::analysis
