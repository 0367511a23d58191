// The kernel page of one launch (analysis/kernel_page.h, BuildLaunchPage) on
// testing/launch_sample_trace.h, whose samples per launch are known: a launch
// alone in its drain window gets that window's samples exactly, two launches
// in one window share it by their time there, a launch no window overlaps
// gets the function's page with that said, and the rows read from the file
// again land on the analysis clock of a trace of two processes.
#include <gtest/gtest.h>

#include <sstream>

#include "testing/launch_sample_trace.h"
#include "testing/temp_file.h"
#include "tracesmith/analysis/kernel_page.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

using tracesmith::testing::LaunchSampleTrace;
using tracesmith::testing::LaunchSampleTraceOptions;

struct LaunchFixture {
  tracesmith::testing::TempPath file{".sbt"};
  CompactTrace trace;
  explicit LaunchFixture(const LaunchSampleTraceOptions& o = {}) {
    EXPECT_TRUE(format::WriteTraceFile(LaunchSampleTrace(o), file.path()).ok());
    EXPECT_TRUE(LoadCompactTrace(file.path(), {}, &trace).ok());
  }
  StatusOr<KernelPage> Page(uint32_t corr, std::optional<uint32_t> pid = {},
                            const std::string& name = "") {
    return BuildLaunchPage(trace, file.path(), LaunchQuery{corr, pid, name}, CallSiteRules{});
  }
};

// (file:line, samples) of each line of the page.
std::vector<std::pair<uint32_t, uint64_t>> LinesOf(const KernelPage& p) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const KernelPageLine& l : p.lines) out.push_back({l.line, l.samples});
  return out;
}

TEST(KernelLaunchPage, ALaunchAloneInItsWindowGetsItsSamples) {
  LaunchFixture f;
  auto p = f.Page(11);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(p->launch.has_value());
  const KernelPageLaunch& l = *p->launch;
  EXPECT_EQ(p->function.name, "hotK()");
  EXPECT_EQ(p->function.samples, 360u);  // the function's, every launch
  EXPECT_EQ(l.pid, 100u);
  EXPECT_EQ(l.stream, 7u);
  EXPECT_EQ(l.index, 1u);
  EXPECT_EQ(l.launches, 4u);
  EXPECT_EQ(l.end_ns - l.start_ns, 1'000'000u);
  EXPECT_TRUE(l.joined);
  EXPECT_EQ(l.samples, 120u);
  EXPECT_EQ(l.windows, 1u);
  EXPECT_EQ(l.shared_windows, 0u);
  ASSERT_EQ(l.stalls.size(), 2u);
  EXPECT_TRUE(l.stalls[0].reason.ends_with("_wait"));
  EXPECT_NEAR(l.stalls[0].share, 83.33, 0.01);
  EXPECT_EQ(l.stalls[1].not_issued, 10u);  // selected's subset, beside it
  EXPECT_EQ(LinesOf(*p), (std::vector<std::pair<uint32_t, uint64_t>>{{5, 100}, {6, 20}}));
  EXPECT_NEAR(p->lines[0].share, 83.33, 0.01);  // of the launch's samples

  std::ostringstream text;
  WriteKernelPageText(*p, text);
  EXPECT_NE(
      text.str().find(
          "\nLaunch with correlation id 11 (pid 100, GPU 0, stream 7): launch 1 "
          "of 4, at +0 ns for 1.000 ms\n  its samples: 120 from 1 drain window "
          "(no other launch of the kernel ran in it: all its samples are this one's)\n  its stall "
          "reasons: wait 83.3%, "
          "selected 16.7%\n\n  SAMPLES  SHARE  LINE / INSTRUCTION  (this "
          "launch's samples)\n"),
      std::string::npos)
      << text.str();
  std::ostringstream json;
  WriteKernelPageJson(*p, json);
  EXPECT_NE(json.str().find("\"launch\":{\"correlation_id\":11,\"pid\":100,"), std::string::npos)
      << json.str();
  EXPECT_NE(json.str().find("\"joined\":true,\"samples\":120,\"windows\":1,\"shared_windows\":0"),
            std::string::npos)
      << json.str();
}

TEST(KernelLaunchPage, LaunchesInOneWindowShareIt) {
  LaunchFixture f;
  for (uint32_t corr : {12u, 13u}) {
    auto p = f.Page(corr);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    const KernelPageLaunch& l = *p->launch;
    EXPECT_EQ(l.samples, 120u) << corr;  // half of W2's 240
    EXPECT_EQ(l.shared_windows, 1u);
    EXPECT_EQ(l.other_launches, 1u);
    EXPECT_EQ(LinesOf(*p), (std::vector<std::pair<uint32_t, uint64_t>>{{5, 20}, {7, 100}}));
    EXPECT_TRUE(l.stalls[0].reason.ends_with("long_scoreboard"));
    std::ostringstream text;
    WriteKernelPageText(*p, text);
    EXPECT_NE(text.str().find("(1 shared with 1 other launch of the kernel: split by how long "
                              "each ran in the window, an estimate)"),
              std::string::npos)
        << text.str();
  }
}

TEST(KernelLaunchPage, ALaunchNoWindowOverlapsShowsTheFunction) {
  LaunchFixture f;
  auto p = f.Page(14);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->launch->joined);
  EXPECT_EQ(p->launch->index, 4u);
  uint64_t all = 0;
  for (const KernelPageLine& l : p->lines) all += l.samples;
  EXPECT_EQ(all, 360u);
  std::ostringstream text;
  WriteKernelPageText(*p, text);
  EXPECT_NE(text.str().find("no drain window of the kernel's samples overlaps this launch: the "
                            "lines below are all its launches' samples"),
            std::string::npos)
      << text.str();
}

TEST(KernelLaunchPage, Errors) {
  LaunchFixture f;
  auto p = f.Page(99);
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("no kernel launch has correlation id 99 (`tracesmith view "
                                      "TRACE --kind kernel` shows each launch's correlation_id)"),
            std::string::npos)
      << p.status().ToString();
  p = f.Page(15);
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("launch 15 runs other(), which has no GPU instruction "
                                      "samples; the sampled kernels with most GPU time:\n  hotK()"),
            std::string::npos)
      << p.status().ToString();
  p = f.Page(0);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  p = f.Page(11, 200);
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("correlation id 11 in process 200"), std::string::npos);
  p = f.Page(11, {}, "gemm");
  EXPECT_NE(p.status().message().find("and a name containing 'gemm'"), std::string::npos);
}

// Two processes with clock anchors: the analysis moves their times onto one
// clock, and the rows read again must move the same way to find their window.
TEST(KernelLaunchPage, TwoProcessesOnOneClock) {
  LaunchFixture f({.second_process = true});
  ASSERT_TRUE(f.trace.stats().clocks_aligned);
  auto p = f.Page(11);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);  // 11 in processes 100 and 200
  EXPECT_NE(p.status().message().find("correlation id 11 names kernel launches in processes "
                                      "100, 200 (ids are per process): choose one with --pid"),
            std::string::npos)
      << p.status().ToString();
  p = f.Page(11, 100);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GT(p->launch->start_ns, 5'000'000'000u);  // on the realtime clock
  EXPECT_TRUE(p->launch->joined);
  EXPECT_EQ(p->launch->samples, 120u);
  p = f.Page(11, 200);  // process 200's hotK was not sampled
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
}

// A template-heavy name (PyTorch's distribution kernels run to ~5,000
// characters) is cut in the text page's header; the JSON keeps it whole.
TEST(KernelPageText, ALongNameIsCutInTheHeader) {
  KernelPage page;
  page.function.name = "void at::native::kernel<" + std::string(5000, 'x') + ">()";
  std::ostringstream text, json;
  WriteKernelPageText(page, text);
  const std::string head = text.str().substr(0, text.str().find('\n'));
  EXPECT_EQ(head.size(), std::string("Kernel ").size() + 297 +
                             std::string("... (--json: the whole name)").size());
  EXPECT_NE(head.find("... (--json: the whole name)"), std::string::npos);
  WriteKernelPageJson(page, json);
  EXPECT_NE(json.str().find(std::string(5000, 'x')), std::string::npos);
}

}  // namespace
}  // namespace tracesmith::analysis
