// `analyze`'s "Program counters" (analysis/app_counters.h) on the hand-built
// trace of testing/app_event_trace.h: each counter per step (min, mean, max)
// next to the step's time, the note of a strong correlation only, the program's
// "step N" ranges as steps, in the text and the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/app_event_trace.h"
#include "tracesmith/analysis/report.h"

namespace tracesmith::analysis {
namespace {

using ::tracesmith::testing::AppLoss;
using ::tracesmith::testing::AppTokensPerSecond;
using ::tracesmith::testing::kAppSteps;

AnalysisReport Analyze(const model::Trace& t) {
  CompactTrace c;
  c.IngestAll(t);
  c.Finalize();
  return BuildReport(c, "app.sbt");
}

const AppCounterStat& Named(const AppCountersReport& a, const std::string& name) {
  for (const AppCounterStat& c : a.counters)
    if (c.name == name) return c;
  ADD_FAILURE() << "no counter " << name;
  return a.counters.at(0);
}

TEST(AppCounters, EachCounterPerStepAndTheStrongNoteOnly) {
  const AnalysisReport r = Analyze(::tracesmith::testing::AppEventTrace());
  ASSERT_EQ(r.steps.steps.size(), size_t(kAppSteps)) << r.steps.method;
  const AppCountersReport& a = r.app_counters;
  EXPECT_EQ(a.values, uint64_t(kAppSteps) * 4);
  ASSERT_EQ(a.counters.size(), 3u);
  const AppCounterStat& loss = Named(a, "loss");
  ASSERT_EQ(loss.steps.size(), size_t(kAppSteps));
  for (int s = 1; s <= kAppSteps; ++s) {
    const AppCounterStep& st = loss.steps[s - 1];
    EXPECT_EQ(st.number, uint32_t(s));
    EXPECT_EQ(st.values, 2u);
    EXPECT_DOUBLE_EQ(st.min, AppLoss(s));
    EXPECT_DOUBLE_EQ(st.max, AppLoss(s) + 0.5);
    EXPECT_DOUBLE_EQ(st.mean, AppLoss(s) + 0.25);
  }
  EXPECT_TRUE(loss.note.empty()) << loss.note;  // alternates: no relation to the step time
  EXPECT_LT(std::fabs(loss.r_wall), kAppNoteMinR);
  const AppCounterStat& tps = Named(a, "tokens/s");
  EXPECT_LT(tps.r_wall, -0.9);
  EXPECT_LT(tps.r_gpu, -0.9);
  EXPECT_EQ(tps.r_steps, uint32_t(kAppSteps));
  EXPECT_NE(tps.note.find("tokens/s falls when the step's"), std::string::npos) << tps.note;
  EXPECT_NE(tps.note.find("step 12"), std::string::npos) << tps.note;  // the first longest
  EXPECT_DOUBLE_EQ(tps.steps[11].mean, AppTokensPerSecond(12));
  EXPECT_DOUBLE_EQ(Named(a, "queue depth").last, double(kAppSteps));

  std::ostringstream text;
  WriteTextReport(r, AnalyzeOptions{}, text);
  EXPECT_NE(text.str().find("Program counters"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("Note: tokens/s falls"), std::string::npos) << text.str();
  std::ostringstream js;
  WriteJsonReport(r, js);
  const nlohmann::json j = nlohmann::json::parse(js.str());
  const auto& counters = j.at("app_counters").at("counters");
  ASSERT_EQ(counters.size(), 3u);
  bool seen = false;
  for (const auto& c : counters) {
    if (c.at("name") != "loss") continue;
    seen = true;
    EXPECT_EQ(c.at("steps").size(), size_t(kAppSteps));
    EXPECT_DOUBLE_EQ(c.at("steps")[0].at("mean").get<double>(), AppLoss(1) + 0.25);
    EXPECT_EQ(c.at("correlation").at("note"), "");
  }
  EXPECT_TRUE(seen);
}

// The program's own values read back from analyze --json bit for bit (a
// float32 loss widened to double has 16 significant digits).
TEST(AppCounters, JsonValuesReadBackExactly) {
  AnalysisReport r = Analyze(::tracesmith::testing::AppEventTrace());
  ASSERT_FALSE(r.app_counters.counters.empty());
  const double loss = 2.326392650604248, rate = 0.1 + 0.2;
  AppCounterStat& c = r.app_counters.counters[0];
  ASSERT_FALSE(c.steps.empty());
  c.last = loss;
  c.steps[0].mean = rate;
  std::ostringstream js;
  WriteJsonReport(r, js);
  const nlohmann::json doc = nlohmann::json::parse(js.str());
  const nlohmann::json& got = doc.at("app_counters").at("counters")[0];
  EXPECT_EQ(got.at("last").get<double>(), loss);
  EXPECT_EQ(got.at("steps")[0].at("mean").get<double>(), rate);
}

// Too few steps: values per step, no note however strong the relation.
TEST(AppCounters, NoNoteWithFewSteps) {
  model::Trace t = ::tracesmith::testing::AppEventTrace();
  auto& ev = t.Rows<model::AppEvent>();
  // Keep steps 10..14 (5 steps): the program's "step N" ranges of the others go.
  std::erase_if(ev, [&](const model::AppEvent& e) {
    const std::string_view n = t.strings.Get(e.name_id);
    if (!n.starts_with("step ")) return false;
    const int s = std::stoi(std::string(n.substr(5)));
    return s < 10 || s > 14;
  });
  const AnalysisReport r = Analyze(t);
  ASSERT_EQ(r.steps.steps.size(), 5u) << r.steps.method;
  const AppCounterStat& tps = Named(r.app_counters, "tokens/s");
  EXPECT_LT(tps.r_wall, -0.7);
  EXPECT_TRUE(tps.note.empty()) << tps.note;
}

TEST(AppCounters, PearsonR) {
  EXPECT_DOUBLE_EQ(PearsonR({1, 2, 3, 4}, {2, 4, 6, 8}), 1.0);
  EXPECT_DOUBLE_EQ(PearsonR({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0);
  EXPECT_TRUE(std::isnan(PearsonR({1, 2}, {1, 2})));        // too few
  EXPECT_TRUE(std::isnan(PearsonR({1, 1, 1}, {1, 2, 3})));  // constant
}

}  // namespace
}  // namespace tracesmith::analysis
