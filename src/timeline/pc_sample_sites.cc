// The join of a function's GPU instruction samples to the code that launched
// it (pc_samples.h: "The launching code").
#include <algorithm>
#include <cmath>

#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

std::vector<uint64_t> JoinSamplesToSites(const std::vector<PcSamples::Window>& windows,
                                         const std::vector<SampledLaunch>& launches, size_t nsites,
                                         uint64_t samples, uint64_t* by_window) {
  std::vector<double> weight(nsites, 0.0);  // samples (of all reasons) per site
  *by_window = 0;
  if (nsites == 0 || samples == 0) return std::vector<uint64_t>(nsites, 0);
  uint64_t longest = 0;
  for (const SampledLaunch& l : launches) longest = std::max(longest, l.end_ns - l.start_ns);
  std::vector<double> overlap(nsites, 0.0);
  double all = 0, placed = 0;
  for (const PcSamples::Window& w : windows) {
    all += double(w.samples);
    const WindowSpan span = SpanOf(w);
    // Launches starting before `to` and ending after `from`: those that start
    // in [from - longest, to).
    auto first = std::lower_bound(
        launches.begin(), launches.end(), span.from > longest ? span.from - longest : 0,
        [](const SampledLaunch& l, uint64_t t) { return l.start_ns < t; });
    std::fill(overlap.begin(), overlap.end(), 0.0);
    double total = 0;
    for (auto l = first; l != launches.end() && l->start_ns < span.to; ++l) {
      const uint64_t ns = OverlapNs(span, l->start_ns, l->end_ns);
      overlap[l->site] += double(ns);
      total += double(ns);
    }
    if (total <= 0) continue;
    placed += double(w.samples);
    for (size_t k = 0; k < nsites; ++k) weight[k] += double(w.samples) * overlap[k] / total;
  }
  // What no launch overlapped: by each site's GPU time.
  std::vector<double> gpu(nsites, 0.0);
  double gpu_total = 0;
  for (const SampledLaunch& l : launches) {
    gpu[l.site] += double(l.end_ns - l.start_ns);
    gpu_total += double(l.end_ns - l.start_ns);
  }
  // (A trace without windows: all of it.)
  const double unplaced = all <= 0 ? 1.0 : std::max(0.0, all - placed);
  for (size_t k = 0; k < nsites && gpu_total > 0; ++k) weight[k] += unplaced * gpu[k] / gpu_total;
  // Scale to the function's counted samples; the rounding remainder to the
  // heaviest site, so the parts sum to `samples`.
  double sum = 0;
  for (double v : weight) sum += v;
  std::vector<uint64_t> out(nsites, 0);
  if (sum <= 0) return out;
  uint64_t given = 0;
  size_t heaviest = 0;
  for (size_t k = 0; k < nsites; ++k) {
    out[k] = static_cast<uint64_t>(std::floor(double(samples) * weight[k] / sum));
    given += out[k];
    if (weight[k] > weight[heaviest]) heaviest = k;
  }
  out[heaviest] += samples - std::min(samples, given);
  *by_window = static_cast<uint64_t>(std::llround(double(samples) * std::min(placed, sum) / sum));
  return out;
}

}  // namespace tracesmith::analysis
