// `view` and `analyze` on what a trace may hold that a terminal must not see raw: a kernel
// whose end is unknown (end < start) and names with control characters
// (issue #21, item 10).
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/trace.h"

namespace tracesmith {
namespace {

TEST(ViewNames, UnknownEndsAndControlCharacters) {
  testing::TempDir dir;
  const std::string path = dir / "t.sbt";
  model::Trace t;
  model::KernelEvent k;
  k.start_ns = 5000;
  k.end_ns = 0;  // not known
  k.name_id = t.strings.Intern("evil\x1b]0;owned\x07kernel");
  t.Rows<model::KernelEvent>().push_back(k);
  model::KernelEvent ok = k;
  ok.start_ns = 6000;
  ok.end_ns = 8000;
  ok.name_id = t.strings.Intern("fine");
  t.Rows<model::KernelEvent>().push_back(ok);
  ASSERT_TRUE(format::WriteTraceFile(t, path).ok());
  for (const char* args : {"view ", "view --stats ", "analyze "}) {
    Result r = RunTracesmith(std::string(args) + path);
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args << "printed an escape character";
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << args;
    EXPECT_NE(r.out.find("evil\\x1b]0;owned\\x07kernel"), std::string::npos) << args << r.out;
    EXPECT_EQ(r.out.find("18446744"), std::string::npos) << args << "printed a wrapped duration";
  }
  Result list = RunTracesmith("view " + path);
  EXPECT_NE(list.out.find("2.000"), std::string::npos) << list.out;  // the known one
}

}  // namespace
}  // namespace tracesmith
