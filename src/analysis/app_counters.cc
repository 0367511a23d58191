#include "tracesmith/analysis/app_counters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tracesmith/analysis/steps.h"
#include "tracesmith/base/status.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Fixed(double v) {
  if (std::fabs(v) >= 1e6 || (v != 0 && std::fabs(v) < 1e-3)) return StrFormat("%.3g", v);
  return StrFormat("%.4g", v);
}

// The note of a strong correlation; empty when it is not.
std::string Note(const AppCounterStat& c, const StepReport& steps) {
  if (c.r_steps < kAppNoteMinSteps) return "";
  const bool gpu = std::isfinite(c.r_gpu) &&
                   (!std::isfinite(c.r_wall) || std::fabs(c.r_gpu) > std::fabs(c.r_wall));
  const double r = gpu ? c.r_gpu : c.r_wall;
  if (!std::isfinite(r) || std::fabs(r) < kAppNoteMinR) return "";
  size_t longest = 0;
  for (size_t i = 1; i < steps.steps.size(); ++i) {
    const uint64_t a = gpu ? steps.steps[i].gpu_busy_ns : steps.steps[i].ns();
    const uint64_t b = gpu ? steps.steps[longest].gpu_busy_ns : steps.steps[longest].ns();
    if (a > b) longest = i;
  }
  std::string out =
      StrFormat("%s %s when the step's %s rises (Pearson r = %+.2f over %u steps)", c.name.c_str(),
                r > 0 ? "rises" : "falls", gpu ? "GPU time" : "wall time", r, c.r_steps);
  if (longest < c.steps.size() && c.steps[longest].values > 0)
    out += StrFormat("; the longest step is step %u, %s %s there (mean over the run %s)",
                     c.steps[longest].number, c.name.c_str(), Fixed(c.steps[longest].mean).c_str(),
                     Fixed(c.mean).c_str());
  return out;
}

}  // namespace

double PearsonR(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 3) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= double(n);
  my /= double(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

AppCountersReport SummarizeAppCounters(const CompactTrace& t, const StepReport& steps) {
  AppCountersReport out;
  out.values = t.app_counter_values();
  out.dropped = t.app_counters_dropped();
  std::map<std::pair<std::string, uint32_t>, std::vector<const AppCounterPoint*>> by_name;
  for (const AppCounterPoint& p : t.app_counters())
    by_name[{std::string(t.String(p.name_id)), p.pid}].push_back(&p);  // in time order
  for (auto& [key, points] : by_name) {
    AppCounterStat c;
    c.name = key.first;
    c.pid = key.second;
    c.values = points.size();
    c.min = std::numeric_limits<double>::infinity();
    c.max = -c.min;
    double sum = 0;
    for (const AppCounterPoint* p : points) {
      c.min = std::min(c.min, p->value);
      c.max = std::max(c.max, p->value);
      sum += p->value;
    }
    c.mean = sum / double(points.size());
    c.last = points.back()->value;
    // Per step: the values in [begin, end) (points are in time order).
    size_t at = 0;
    std::vector<double> means, wall, gpu;
    for (size_t s = 0; s < steps.steps.size(); ++s) {
      const Step& step = steps.steps[s];
      AppCounterStep cs;
      cs.number = steps.first_number + uint32_t(s);
      while (at < points.size() && points[at]->ts_ns < step.begin_ns) ++at;
      double lo = std::numeric_limits<double>::infinity(), hi = -lo, total = 0;
      for (size_t i = at; i < points.size() && points[i]->ts_ns < step.end_ns; ++i) {
        lo = std::min(lo, points[i]->value);
        hi = std::max(hi, points[i]->value);
        total += points[i]->value;
        ++cs.values;
      }
      if (cs.values) {
        cs.min = lo;
        cs.max = hi;
        cs.mean = total / double(cs.values);
        means.push_back(cs.mean);
        wall.push_back(double(step.ns()));
        gpu.push_back(double(step.gpu_busy_ns));
      } else {
        cs.min = cs.mean = cs.max = kNaN;
      }
      c.steps.push_back(cs);
    }
    c.r_steps = uint32_t(means.size());
    c.r_wall = PearsonR(means, wall);
    c.r_gpu = PearsonR(means, gpu);
    c.note = Note(c, steps);
    out.counters.push_back(std::move(c));
  }
  return out;
}

}  // namespace tracesmith::analysis
