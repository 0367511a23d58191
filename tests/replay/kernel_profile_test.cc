// replay --metrics, the CPU side: the metric set, what follows from the
// values (throughputs, DRAM bytes, FLOPs, intensity, the roofline verdict),
// the launch block's lines and the JSON object.
#include "tracesmith/replay/kernel_profile.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tracesmith/replay/replay_json.h"

namespace tracesmith::replay {
namespace {

KernelProfile Measured(double sm, double mem) {
  KernelProfile p;
  p.requested = p.measured = true;
  p.passes = 9;
  p.values = {{kMetricDuration, 12'500},
              {kMetricSmThroughput, sm},
              {kMetricMemThroughput, mem},
              {kMetricOccupancy, 81.5},
              {kMetricDramThroughput, 77.0},
              {kMetricDramRead, 3'000'000},
              {kMetricDramWrite, 1'000'000},
              {kMetricL2Hit, 42.0},
              {kMetricTensor, 0.0},
              {kMetricFp32Fma, 1'000'000},
              {kMetricFp32Add, 500'000},
              {kMetricFp32Mul, 0},
              {kMetricFp64Fma, 0}};
  DeriveKernelProfile(&p);
  return p;
}

TEST(KernelProfile, ParsesTheSetOrGivesTheDefault) {
  EXPECT_EQ(ParseKernelMetrics(""), DefaultKernelMetrics());
  EXPECT_EQ(ParseKernelMetrics(" , "), DefaultKernelMetrics());
  EXPECT_EQ(ParseKernelMetrics("a, b,a,,c "), (std::vector<std::string>{"a", "b", "c"}));
  // The default set holds what the derivation reads.
  for (const char* n : {kMetricDuration, kMetricSmThroughput, kMetricMemThroughput,
                        kMetricOccupancy, kMetricDramRead, kMetricDramWrite, kMetricL2Hit})
    EXPECT_NE(std::find(DefaultKernelMetrics().begin(), DefaultKernelMetrics().end(), n),
              DefaultKernelMetrics().end())
        << n;
}

TEST(KernelProfile, DerivesBytesFlopsIntensityAndTheVerdict) {
  KernelProfile p = Measured(20.0, 85.0);
  EXPECT_DOUBLE_EQ(p.duration_ns, 12'500);
  EXPECT_DOUBLE_EQ(p.dram_bytes, 4'000'000);
  EXPECT_DOUBLE_EQ(p.flops_fp32, 2'500'000);  // 2 x FMA + add + mul
  EXPECT_DOUBLE_EQ(p.flops_fp64, 0);
  EXPECT_TRUE(std::isnan(p.flops_fp16));  // none of its three measured
  EXPECT_DOUBLE_EQ(p.intensity, 2'500'000.0 / 4'000'000);
  EXPECT_EQ(p.verdict, "memory-bound");
  EXPECT_EQ(Measured(90.0, 40.0).verdict, "compute-bound");
  EXPECT_EQ(Measured(70.0, 65.0).verdict, "compute-bound");  // both busy: the busier
  EXPECT_EQ(Measured(65.0, 70.0).verdict, "memory-bound");
  KernelProfile idle = Measured(12.0, 30.0);
  EXPECT_EQ(idle.verdict, "latency-bound");
  EXPECT_NE(idle.why.find("neither reaches 60%"), std::string::npos) << idle.why;
  // Without the two throughputs: no verdict.
  KernelProfile some;
  some.values = {{kMetricDuration, 1000}};
  DeriveKernelProfile(&some);
  EXPECT_EQ(some.verdict, "");
  EXPECT_TRUE(std::isnan(some.dram_bytes));
}

TEST(KernelProfile, LinesSayWhatWasMeasuredOrWhyNot) {
  EXPECT_EQ(FormatKernelProfile(KernelProfile{}), "");  // not asked for
  KernelProfile p = Measured(20.0, 85.0);
  p.dropped = {"no_such__metric.sum"};
  const std::string s = FormatKernelProfile(p);
  EXPECT_NE(s.find("metrics (9 passes): duration 12.50 us, SM throughput 20.0%, memory "
                   "throughput 85.0%, achieved occupancy 81.5%"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("DRAM 3.81 MiB (77.0% of peak bandwidth), L2 hit rate 42.0%"), std::string::npos)
      << s;
  EXPECT_NE(s.find("FLOPs: FP32 2.5e+06"), std::string::npos) << s;
  EXPECT_NE(s.find("roofline: memory-bound (SM 20.0%, memory 85.0% of peak"), std::string::npos)
      << s;
  EXPECT_NE(s.find("not measured (the GPU's profiler does not know them): no_such__metric.sum"),
            std::string::npos)
      << s;
  KernelProfile off;
  off.requested = true;
  off.error = "graph launches are not measured";
  EXPECT_EQ(FormatKernelProfile(off), "  metrics: not measured: graph launches are not measured\n");
}

TEST(KernelProfile, JsonUnderTheLaunch) {
  LaunchOutcome o;
  o.index = 3;
  o.function = "k";
  o.iterations = 1;
  o.profile = Measured(20.0, 85.0);
  nlohmann::json j = nlohmann::json::parse(LaunchOutcomeJson(o));
  const nlohmann::json& m = j.at("metrics");
  EXPECT_EQ(m.at("measured"), true);
  EXPECT_EQ(m.at("passes"), 9);
  EXPECT_EQ(m.at("values").at(kMetricDramRead), 3'000'000);
  EXPECT_EQ(m.at("dram_bytes"), 4'000'000);
  EXPECT_EQ(m.at("dram_throughput_pct"), 77.0);
  EXPECT_EQ(m.at("roofline"), "memory-bound");
  EXPECT_TRUE(m.at("flops").at("fp16").is_null());
  o.profile = KernelProfile{};
  EXPECT_TRUE(nlohmann::json::parse(LaunchOutcomeJson(o)).at("metrics").is_null());
}

}  // namespace
}  // namespace tracesmith::replay
