// Exact instruction count rows (model::SassCount, kind 75, `profile
// --sass-counts`) through the file: every row and field comes back, with the
// line and SASS rows of the same instructions; a file without them reads as
// before (no rows).
#include <gtest/gtest.h>

#include "testing/sass_count_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::format {
namespace {

TEST(SassCountRows, SurviveTheFile) {
  ::tracesmith::testing::TempPath file{".sbt"};
  const model::Trace t = ::tracesmith::testing::SassCountTrace();
  ASSERT_TRUE(WriteTraceFile(t, file.path()).ok());
  auto back = ReadTraceFile(file.path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const auto& rows = back->Rows<model::SassCount>();
  const auto& sent = t.Rows<model::SassCount>();
  ASSERT_EQ(rows.size(), sent.size());
  uint64_t executed = 0, threads = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].pc_offset, sent[i].pc_offset);
    EXPECT_EQ(rows[i].executed, sent[i].executed);
    EXPECT_EQ(rows[i].thread_executed, sent[i].thread_executed);
    EXPECT_EQ(rows[i].pid, 100u);
    EXPECT_EQ(rows[i].cubin_crc, 0xC0FFEEu);
    EXPECT_EQ(back->strings.Get(rows[i].function_id), t.strings.Get(sent[i].function_id));
    executed += rows[i].executed;
    threads += rows[i].thread_executed;
  }
  EXPECT_EQ(executed, 25856u + 200u);
  EXPECT_EQ(threads, 827392u + 6400u);
  EXPECT_EQ(back->Rows<model::PcLine>().size(), t.Rows<model::PcLine>().size());
  EXPECT_EQ(back->Rows<model::PcSass>().size(), t.Rows<model::PcSass>().size());
  EXPECT_EQ(model::RecordTraits<model::SassCount>::kLabel, std::string_view("sasscount"));
  EXPECT_EQ(int(model::TableKind::kSassCount), 75);
}

TEST(SassCountRows, AFileWithoutThemHasNone) {
  ::tracesmith::testing::TempPath file{".sbt"};
  model::Trace t = ::tracesmith::testing::SassCountTrace();
  t.Rows<model::SassCount>().clear();
  ASSERT_TRUE(WriteTraceFile(t, file.path()).ok());
  auto back = ReadTraceFile(file.path());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->Rows<model::SassCount>().empty());
  EXPECT_EQ(back->Rows<model::KernelEvent>().size(), 3u);
}

}  // namespace
}  // namespace tracesmith::format
