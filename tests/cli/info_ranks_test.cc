// `info` labels every rank of a distributed run, rank 0 included, and not
// processes whose rank is unknown (issue #14 item 6).
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_runner.h"
#include "testing/temp_dir.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/trace.h"

namespace tracesmith {
namespace {

std::string InfoOfProcess(const testing::TempDir& dir, int32_t rank, bool captured) {
  const std::string path = dir / ("p" + std::to_string(rank) + (captured ? "c" : "i") + ".sbt");
  model::Trace t;
  model::Process p{};
  p.pid = 4242;
  p.name_id = t.strings.Intern("python3");
  p.rank = rank;
  // A capture records the host name; importers (torch.profiler JSON, XRay)
  // do not, and leave the rank at 0.
  if (captured) p.hostname_id = t.strings.Intern("gpu-node-7");
  t.Rows<model::Process>().push_back(p);
  EXPECT_TRUE(format::WriteTraceFile(t, path).ok());
  Result r = RunTracesmith("info " + path);
  EXPECT_EQ(r.status, 0) << r.out;
  return r.out;
}

TEST(InfoRanks, RankZeroIsLabelledLikeTheOthers) {
  testing::TempDir dir;
  EXPECT_NE(InfoOfProcess(dir, 0, true).find("on gpu-node-7 rank 0"), std::string::npos);
  EXPECT_NE(InfoOfProcess(dir, 1, true).find("on gpu-node-7 rank 1"), std::string::npos);
  EXPECT_EQ(InfoOfProcess(dir, -1, true).find(" rank "), std::string::npos);  // no RANK
  EXPECT_EQ(InfoOfProcess(dir, 0, false).find(" rank "), std::string::npos);  // imported
}

}  // namespace
}  // namespace tracesmith
