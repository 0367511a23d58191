// Symbolization (src/symbolize/) of frames the stack collector captured,
// with and without debug info.
#include "tracesmith/symbolize/symbolizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "chains.h"
#include "testing/temp_file.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/stacks/stack_collector.h"

namespace tracesmith::stacks {
namespace {

using model::Trace;
using symbolize::Symbolize;
using symbolize::SymbolizeAddress;
using symbolize::SymbolizeOptions;

// A trace holding one stack captured through the test library, as written
// by the collector and read back.
Trace CaptureTraceThroughLibrary(uint32_t* stack_id) {
  StackCollectorOptions o;
  o.mode = StackMode::kNative;
  StackCollector c(o);
  testing::ChainThroughLibrary(2, [&] {
    *stack_id = c.CaptureStack();
    return 0;
  });
  tracesmith::testing::TempPath tmp;
  auto writer = format::SbtWriter::Open(tmp.path());
  EXPECT_TRUE(writer.ok());
  c.Drain(writer->get());
  EXPECT_TRUE((*writer)->Close().ok());
  auto trace = format::ReadTraceFile(tmp.path());
  EXPECT_TRUE(trace.ok());
  return std::move(trace).value();
}

uint32_t LibMappingId(const Trace& t) {
  for (const model::Mapping& m : t.Rows<model::Mapping>())
    if (t.strings.Get(m.path_id).find("libts_stacks_testlib.so") != std::string_view::npos)
      return m.mapping_id;
  return 0;
}

void SetLibPath(Trace* t, const std::string& path, const std::string& build_id = "") {
  for (model::Mapping& m : t->Rows<model::Mapping>()) {
    if (m.mapping_id != LibMappingId(*t)) continue;
    m.path_id = t->strings.Intern(path);
    if (!build_id.empty()) m.build_id_id = t->strings.Intern(build_id);
  }
}

TEST(SymbolizerTest, WithDebugInfo) {
  uint32_t id = 0;
  Trace t = CaptureTraceThroughLibrary(&id);
  uint32_t lib = LibMappingId(t);
  ASSERT_NE(lib, 0u);
  for (const model::Mapping& m : t.Rows<model::Mapping>()) {
    if (m.mapping_id == lib) {
      EXPECT_EQ(t.strings.Get(m.build_id_id).size(), 40u);
    }  // SHA-1
  }
  auto stats = Symbolize(&t);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_GT(stats->with_function, 5u);
  bool lib_frame = false, chain_frame = false;
  for (uint32_t fid : model::StackFrames(t, id)) {
    const model::Frame& f = t.Rows<model::Frame>()[fid - 1];
    std::string fn(t.strings.Get(f.function_id)), file(t.strings.Get(f.file_id));
    if (f.mapping_id == lib) {
      lib_frame = true;
      EXPECT_EQ(fn, "TsLibRecurse");
      EXPECT_EQ(std::filesystem::path(file).filename(), "test_lib.cc");
      EXPECT_GT(f.line, 0u);
    }
    if (fn.find("ChainThroughLibrary(int") != std::string::npos) {
      chain_frame = true;  // demangled C++ name, with namespace and parameters
      EXPECT_NE(fn.find("tracesmith::stacks::testing::"), std::string::npos) << fn;
      EXPECT_EQ(std::filesystem::path(file).filename(), "chains.cc");
    }
  }
  EXPECT_TRUE(lib_frame);
  EXPECT_TRUE(chain_frame);
}

TEST(SymbolizerTest, SymbolTableOnlyWithoutDebugInfo) {
  uint32_t id = 0;
  Trace t = CaptureTraceThroughLibrary(&id);
  const uint32_t lib = LibMappingId(t);
  SetLibPath(&t, TS_TESTLIB_NODEBUG_PATH);  // same build-id: --strip-debug keeps the note
  auto stats = Symbolize(&t);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->build_id_mismatch, 0u);
  int lib_frames = 0;
  for (const model::Frame& f : t.Rows<model::Frame>()) {
    if (f.mapping_id != lib) continue;
    ++lib_frames;
    EXPECT_EQ(t.strings.Get(f.function_id), "TsLibRecurse");
    EXPECT_EQ(f.file_id, 0u);
    EXPECT_EQ(f.line, 0u);
  }
  EXPECT_GT(lib_frames, 0);
}

TEST(SymbolizerTest, MissingModuleMismatchedBuildAndSearchDirs) {
  uint32_t id = 0;
  Trace missing = CaptureTraceThroughLibrary(&id);
  const uint32_t lib = LibMappingId(missing);
  SetLibPath(&missing, "/nonexistent/dir/libts_stacks_testlib.so");
  auto stats = Symbolize(&missing);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->modules_missing, 1u);
  for (const model::Frame& f : missing.Rows<model::Frame>()) {
    if (f.mapping_id == lib) {
      EXPECT_EQ(f.function_id, 0u);
    }
  }

  // Found through a search directory (the analysis machine's copy).
  SymbolizeOptions options;
  options.search_dirs = {std::filesystem::path(TS_TESTLIB_PATH).parent_path().string()};
  stats = Symbolize(&missing, options);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->modules_missing, 0u);
  for (const model::Frame& f : missing.Rows<model::Frame>()) {
    if (f.mapping_id == lib) {
      EXPECT_NE(f.function_id, 0u);
    }
  }

  Trace other = CaptureTraceThroughLibrary(&id);
  SetLibPath(&other, TS_TESTLIB_PATH, "00112233445566778899aabbccddeeff00112233");
  stats = Symbolize(&other);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->build_id_mismatch, 1u);
}

TEST(SymbolizerTest, AddressLookupAndBadInput) {
  auto missing = SymbolizeAddress("/nonexistent.so", 0x1000);
  EXPECT_FALSE(missing.ok());
  Trace t;
  t.Rows<model::Frame>().push_back(model::Frame{0x10, 7, 0, 0, 0, model::kFrameNative});
  EXPECT_FALSE(Symbolize(&t).ok());  // mapping 7 does not exist
}

}  // namespace
}  // namespace tracesmith::stacks
