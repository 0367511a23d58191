// The GPU metric samples a compact trace keeps (timeline/gpu_metric_series.h).
#include <algorithm>

#include "tracesmith/timeline/gpu_metric_series.h"

namespace tracesmith::analysis {

void GpuMetricSeries::Add(const std::vector<model::GpuMetricSample>& rows) {
  for (const model::GpuMetricSample& r : rows) {
    std::vector<Point>& s = series_[Key{r.pid, r.device_id, r.metric_id}];
    s.push_back(Point{r.start_ns, std::max(r.start_ns, r.end_ns), r.value});
    ++points_;
  }
  rows_ += rows.size();
  // Each round halves every series of two points or more (none left: stop).
  for (size_t before = 0; points_ > kMaxPoints && points_ != before;) {
    before = points_;
    Coarsen();
  }
}

void GpuMetricSeries::Coarsen() {
  points_ = 0;
  for (auto& [key, s] : series_) {
    std::vector<Point> out;
    out.reserve(s.size() / 2 + 1);
    for (size_t i = 0; i < s.size(); i += 2) {
      if (i + 1 == s.size()) {
        out.push_back(s[i]);
        break;
      }
      const Point& a = s[i];
      const Point& b = s[i + 1];
      const double wa = double(a.end_ns - a.start_ns), wb = double(b.end_ns - b.start_ns);
      Point m;
      m.start_ns = std::min(a.start_ns, b.start_ns);
      m.end_ns = std::max(a.end_ns, b.end_ns);
      m.value = wa + wb > 0 ? (a.value * wa + b.value * wb) / (wa + wb) : (a.value + b.value) / 2;
      out.push_back(m);
    }
    s.swap(out);
    points_ += s.size();
  }
  merged_ *= 2;
}

void GpuMetricSeries::Sort() {
  for (auto& [key, s] : series_)
    if (!std::is_sorted(s.begin(), s.end(),
                        [](const Point& a, const Point& b) { return a.start_ns < b.start_ns; }))
      std::stable_sort(s.begin(), s.end(),
                       [](const Point& a, const Point& b) { return a.start_ns < b.start_ns; });
}

}  // namespace tracesmith::analysis
