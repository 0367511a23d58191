// The CLI re-executes itself once with glibc's huge-page tunable when the
// kernel's THP mode is "madvise" (src/cli/huge_pages.h); `version -v` says
// what this process got.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_runner.h"
#include "huge_pages.h"
#include "testing/build_paths.h"

namespace tracesmith {
namespace {

std::string ThpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? ""
             : line.substr(open + 1, close - open - 1);
}

// Whether the CLI under test is a sanitizer build: its units are instrumented
// even when this test's are not (tests/CMakeLists.txt, ts_test_build_speed).
bool CliUnderSanitizer() {
  return ::tracesmith::testing::ProductUnderAsan() || cli::SanitizerOwnsMalloc();
}

TEST(CliHugePages, VersionSaysWhatThisProcessGot) {
  const std::string mode = ThpMode();
  Result r = RunTracesmith("version -v");
  ASSERT_EQ(r.status, 0) << r.out;
  if (CliUnderSanitizer())
    EXPECT_NE(r.out.find("transparent huge pages: not advised (sanitizer build"), std::string::npos)
        << r.out;
  else if (mode == "madvise")
    EXPECT_NE(r.out.find("transparent huge pages: advised (THP mode madvise"), std::string::npos)
        << r.out;
  else if (mode == "always")
    EXPECT_NE(r.out.find("transparent huge pages: always"), std::string::npos) << r.out;
  else
    EXPECT_NE(r.out.find("transparent huge pages: not available"), std::string::npos) << r.out;
  // Plain `version` prints the one line it always did.
  EXPECT_EQ(RunTracesmith("version").out.find("huge pages"), std::string::npos);
}

TEST(CliHugePages, TheUserDecides) {
  if (CliUnderSanitizer()) GTEST_SKIP() << "sanitizer build: glibc's malloc is not used";
  if (ThpMode() != "madvise") GTEST_SKIP() << "THP mode is not madvise here: nothing to advise";
  Result off = RunTracesmith("version -v", "TRACESMITH_HUGE_PAGES=0 ");
  EXPECT_NE(off.out.find("not advised (TRACESMITH_HUGE_PAGES=0)"), std::string::npos) << off.out;
  Result theirs = RunTracesmith("version -v", "GLIBC_TUNABLES=glibc.malloc.hugetlb=0 ");
  EXPECT_NE(theirs.out.find("as GLIBC_TUNABLES says (glibc.malloc.hugetlb=0)"), std::string::npos)
      << theirs.out;
  // Other tunables the user set are kept, and huge pages are added to them.
  Result other = RunTracesmith("version -v", "GLIBC_TUNABLES=glibc.malloc.arena_max=2 ");
  EXPECT_NE(other.out.find("advised (THP mode madvise"), std::string::npos) << other.out;
}

// `profile` is never re-executed: the user's program, its child, must see
// the environment the user gave (no tunable, no saved copy of it).
TEST(CliHugePages, ProfilesTargetSeesTheUsersEnvironment) {
  if (ThpMode() != "madvise") GTEST_SKIP() << "THP mode is not madvise here";
  // (Without a GPU the program still runs; no trace is written.)
  Result r = RunTracesmith("profile -f -o /dev/null -- /usr/bin/env");
  EXPECT_EQ(r.out.find("glibc.malloc.hugetlb"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("TRACESMITH_SAVED_GLIBC_TUNABLES"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tracesmith
