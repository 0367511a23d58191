// The end of a capture (symbolize::FinishCapture, issue #43): the trace of a
// stack the collector captured through the test library is rewritten with its
// native frames named, by the library call `profile` makes and by an
// in-process capture's stop (capture::FinishStoppedCapture: Session::Stop's
// last step, which runs this build's `tracesmith symbolize --capture-end`);
// skipped on request; bounded by its time limit.
#include "tracesmith/symbolize/finish_capture.h"

#include <gtest/gtest.h>

#include <string>

#include "chains.h"
#include "testing/build_paths.h"
#include "testing/temp_file.h"
#include "tracesmith/capture/finish_process.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::capture {
namespace {

using stacks::StackCollector;
using stacks::StackCollectorOptions;
using stacks::StackMode;
namespace testing = stacks::testing;
using symbolize::FinishCapture;
using symbolize::FinishOptions;
using symbolize::FinishReport;

// Writes a trace holding one native stack captured through the test
// library, as a capture leaves it (frames unnamed); returns its stack id.
uint32_t WriteCapturedTrace(const std::string& path) {
  StackCollectorOptions o;
  o.mode = StackMode::kNative;
  StackCollector c(o);
  uint32_t id = 0;
  testing::ChainThroughLibrary(2, [&] {
    id = c.CaptureStack();
    return 0;
  });
  auto writer = format::SbtWriter::Open(path);
  EXPECT_TRUE(writer.ok());
  c.Drain(writer->get());
  EXPECT_TRUE((*writer)->Close().ok());
  return id;
}

// The test library's frame of the stack: its function name ("" when unnamed).
std::string LibFrameName(const std::string& path, uint32_t stack_id) {
  auto t = format::ReadTraceFile(path);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return "?";
  uint32_t lib = 0;
  for (const model::Mapping& m : t->Rows<model::Mapping>())
    if (t->strings.Get(m.path_id).find("libts_stacks_testlib.so") != std::string_view::npos)
      lib = m.mapping_id;
  EXPECT_NE(lib, 0u);
  for (uint32_t fid : model::StackFrames(*t, stack_id)) {
    const model::Frame& f = t->Rows<model::Frame>()[fid - 1];
    if (f.mapping_id == lib) return std::string(t->strings.Get(f.function_id));
  }
  ADD_FAILURE() << "no frame of the test library in stack " << stack_id;
  return "?";
}

TEST(FinishCaptureTest, NamesTheNativeFramesOfTheClosedTrace) {
  tracesmith::testing::TempPath tmp;
  const uint32_t id = WriteCapturedTrace(tmp.path());
  ASSERT_EQ(LibFrameName(tmp.path(), id), "");  // as captured: module + offset
  const FinishReport r = FinishCapture(tmp.path());
  EXPECT_TRUE(r.rewritten);
  EXPECT_FALSE(r.names_incomplete);
  EXPECT_GT(r.named_frames, 5u);
  EXPECT_LE(r.named_frames, r.native_frames);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_NE(r.lines[0].find("native frames named"), std::string::npos) << r.lines[0];
  EXPECT_EQ(LibFrameName(tmp.path(), id), "TsLibRecurse");
  // Nothing left to name: a second pass leaves the file alone.
  EXPECT_FALSE(FinishCapture(tmp.path()).rewritten);
}

TEST(FinishCaptureTest, SessionStopNamesFramesWithTheCli) {
  tracesmith::testing::TempPath tmp;
  const uint32_t id = WriteCapturedTrace(tmp.path());
  CaptureOptions options;  // symbolize defaults to true
  options.quiet = true;
  auto run = FinishStoppedCapture(tmp.path(), options, tracesmith::testing::TracesmithBin());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->ran);
  EXPECT_NE(run->command.find("symbolize " + tmp.path() +
                              " --capture-end --time-limit "
                              "120000000000 -q"),
            std::string::npos)
      << run->command;
  EXPECT_EQ(LibFrameName(tmp.path(), id), "TsLibRecurse");
}

TEST(FinishCaptureTest, SessionStopLeavesFramesUnnamedWhenAskedTo) {
  tracesmith::testing::TempPath tmp;
  const uint32_t id = WriteCapturedTrace(tmp.path());
  auto options = OptionsFromEnv({{kEnvSymbolize, "0"}, {kEnvQuiet, "1"}});
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_FALSE(options->symbolize);
  auto run = FinishStoppedCapture(tmp.path(), *options, tracesmith::testing::TracesmithBin());
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_FALSE(run->ran);  // no cubins either: nothing to run
  EXPECT_EQ(LibFrameName(tmp.path(), id), "");
}

TEST(FinishCaptureTest, SessionStopWithoutTheCliSaysHowToNameLater) {
  tracesmith::testing::TempPath tmp;
  const uint32_t id = WriteCapturedTrace(tmp.path());
  CaptureOptions options;
  auto run = FinishStoppedCapture(tmp.path(), options, "/nonexistent/bin/tracesmith");
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("run: tracesmith symbolize " + tmp.path()),
            std::string::npos)
      << run.status().message();
  EXPECT_EQ(LibFrameName(tmp.path(), id), "");
}

TEST(FinishCaptureTest, TimeLimitLeavesTheRestUnnamedAndSaysHowToName) {
  tracesmith::testing::TempPath tmp;
  const uint32_t id = WriteCapturedTrace(tmp.path());
  FinishOptions options;
  options.time_limit_s = 1e-9;  // spent before the first module is opened
  const FinishReport r = FinishCapture(tmp.path(), options);
  EXPECT_TRUE(r.names_incomplete);
  EXPECT_EQ(r.named_frames, 0u);
  ASSERT_FALSE(r.lines.empty());
  EXPECT_NE(r.lines[0].find("left unnamed at the time limit"), std::string::npos) << r.lines[0];
  EXPECT_NE(r.lines[0].find("tracesmith symbolize " + tmp.path()), std::string::npos);
  EXPECT_EQ(LibFrameName(tmp.path(), id), "");
}

TEST(FinishCaptureTest, TimeLimitOptionParsesAndRoundTrips) {
  CaptureOptions o;
  EXPECT_EQ(OptionsToEnv(o).count(kEnvSymbolize), 0u);  // the defaults are not spelt out
  EXPECT_EQ(OptionsToEnv(o).count(kEnvSymbolizeTimeLimit), 0u);
  o.symbolize = false;
  o.symbolize_time_limit_ns = 5'000'000'000;
  auto back = OptionsFromEnv(OptionsToEnv(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_FALSE(back->symbolize);
  EXPECT_EQ(back->symbolize_time_limit_ns, 5'000'000'000u);
  EXPECT_EQ(OptionsFromEnv({{kEnvSymbolizeTimeLimit, "30s"}})->symbolize_time_limit_ns,
            30'000'000'000u);
  auto bad = OptionsFromEnv({{kEnvSymbolizeTimeLimit, "soon"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(kEnvSymbolizeTimeLimit), std::string::npos);
  EXPECT_FALSE(OptionsFromEnv({{kEnvSymbolize, "yes"}}).ok());
}

}  // namespace
}  // namespace tracesmith::capture
