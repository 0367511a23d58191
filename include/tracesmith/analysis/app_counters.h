// The program's own counters (tracesmith.counter, app.h's ts_app_counter:
// AppCounterEvent rows) step by step: each counter's values in each step
// (min, mean, max) next to the step's wall and GPU time, and a plain note
// when a counter moves with the step's time.
//
// The note is a Pearson correlation between the counter's mean per step and
// the step's length (wall, and GPU busy time), said only when it is strong
// (|r| >= kAppNoteMinR) over enough steps (>= kAppNoteMinSteps), with the
// longest step named: a hint where to look, not a cause.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tracesmith::analysis {

class CompactTrace;  // timeline/compact_trace.h (its AppCounterPoint values)
struct StepReport;

inline constexpr double kAppNoteMinR = 0.7;
inline constexpr uint32_t kAppNoteMinSteps = 8;

struct AppCounterStep {
  uint32_t number = 0;  // the step's number (StepReport numbering)
  uint64_t values = 0;  // the counter's values inside the step; 0: min/mean/max are NaN
  double min = 0, mean = 0, max = 0;
};

struct AppCounterStat {
  std::string name;
  uint32_t pid = 0;
  uint64_t values = 0;
  double min = 0, mean = 0, max = 0, last = 0;
  std::vector<AppCounterStep> steps;  // one per step of the report (empty: no steps)
  // Pearson r of the per-step means with the steps' wall and GPU busy time
  // (NaN: fewer than 3 steps with values, or a constant series).
  double r_wall = 0, r_gpu = 0;
  uint32_t r_steps = 0;  // steps with values that entered r
  std::string note;      // set only when strong (see above)
};

struct AppCountersReport {
  uint64_t values = 0;   // AppCounterEvent rows read
  uint64_t dropped = 0;  // beyond CompactTrace's bound (kMaxAppCounterPoints), not analysed
  std::vector<AppCounterStat> counters;  // by (name, pid)
  bool empty() const { return counters.empty(); }
};

// Pearson's r of two equally long series (NaN when undefined).
double PearsonR(const std::vector<double>& x, const std::vector<double>& y);

AppCountersReport SummarizeAppCounters(const CompactTrace& trace, const StepReport& steps);

}  // namespace tracesmith::analysis
