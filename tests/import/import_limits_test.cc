// ImportFile's guards against inputs that are no trace (issue #21 item 6):
// the format is told from the first block, so /dev/zero is refused at once
// instead of read until memory runs out, and a gzip stream that inflates
// past the limit (a "gzip bomb") stops with a message naming the override.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "testing/temp_file.h"
#include "tracesmith/import/import.h"

namespace tracesmith::importer {
namespace {

TEST(ImportLimits, DevZeroIsRefusedFromItsFirstBytes) {
  auto t = ImportFile("/dev/zero");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("unrecognised trace format"), std::string::npos)
      << t.status().ToString();
}

TEST(ImportLimits, GzipThatInflatesPastTheLimitStopsWithTheOverride) {
  testing::TempPath path(".json.gz");
  gzFile f = gzopen(path.path().c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  std::string block(1 << 20, ' ');
  gzwrite(f, "{", 1);
  for (int i = 0; i < 8; ++i) gzwrite(f, block.data(), unsigned(block.size()));  // 8 MiB
  gzclose(f);
  ImportOptions o;
  o.max_input_bytes = 1 << 20;
  auto t = ImportFile(path.path(), o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("decompresses to more than 1.0 MiB"), std::string::npos)
      << t.status().ToString();
  EXPECT_NE(t.status().message().find("--max-input-gb"), std::string::npos);
  // With room for it, the same file is read (and is an empty, unfinished JSON object).
  o.max_input_bytes = 16 << 20;
  auto again = ImportFile(path.path(), o);
  if (!again.ok()) {
    EXPECT_EQ(again.status().message().find("decompresses to"), std::string::npos);
  }
}

TEST(ImportLimits, DefaultLimitIsAHundredTimesTheFileAndAtLeastOneGiB) {
  ImportOptions o;
  EXPECT_EQ(MaxInputBytes(o, 1000), uint64_t{1} << 30);
  EXPECT_EQ(MaxInputBytes(o, uint64_t{12} << 20), uint64_t{1200} << 20);
  o.max_input_bytes = 5;
  EXPECT_EQ(MaxInputBytes(o, uint64_t{12} << 20), 5u);
}

}  // namespace
}  // namespace tracesmith::importer
