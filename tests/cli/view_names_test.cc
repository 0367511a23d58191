// `view` and `analyze` on what a trace may hold that a terminal must not see raw: a kernel
// whose end is unknown (end < start) and names with control characters
// (issue #21, item 10).
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
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

// `view --stacks`: a symbolized native frame with its module and offset, an
// unsymbolized one as module+offset alone (not "0xabc [libfoo.so+0xabc]"),
// a Python frame with its line.
TEST(ViewNames, StacksPrintEachFrameOnce) {
  testing::TempDir dir;
  const std::string path = dir / "t.sbt";
  model::Trace t;
  t.Rows<model::Mapping>().push_back({.mapping_id = 1,
                                      .start = 0x1000,
                                      .end = 0x9000,
                                      .path_id = t.strings.Intern("/opt/libfoo.so")});
  model::StackBuilder b(&t);
  const uint32_t named = b.InternFrame({.rel_pc = 0x1234,
                                        .mapping_id = 1,
                                        .function_id = t.strings.Intern("cudaLaunchKernel"),
                                        .kind = model::kFrameNative});
  const uint32_t bare =
      b.InternFrame({.rel_pc = 0xabc, .mapping_id = 1, .kind = model::kFrameNative});
  const uint32_t py = b.InternFrame({.function_id = t.strings.Intern("step"),
                                     .file_id = t.strings.Intern("train.py"),
                                     .line = 36,
                                     .kind = model::kFramePython});
  const uint32_t frames[] = {named, bare, py};
  model::ApiEvent a;
  a.start_ns = 1000;
  a.end_ns = 2000;
  a.name_id = t.strings.Intern("cudaLaunchKernel");
  a.stack_id = b.InternStack(frames);
  t.Rows<model::ApiEvent>().push_back(a);
  ASSERT_TRUE(format::WriteTraceFile(t, path).ok());
  Result r = RunTracesmith("view --stacks " + path);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("cudaLaunchKernel [/opt/libfoo.so+0x1234]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/opt/libfoo.so+0xabc"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0xabc ["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[py] step (train.py:36)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tracesmith
