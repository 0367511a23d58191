#include "tracesmith/replay/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/status.h"

namespace tracesmith::replay {

void CompareResult::Merge(const CompareResult& o) {
  if (o.bytes_differing && (!bytes_differing || o.first_diff_address < first_diff_address))
    first_diff_address = o.first_diff_address;
  bytes_compared += o.bytes_compared;
  bytes_differing += o.bytes_differing;
  float_words_differing += o.float_words_differing;
  max_abs_error = std::max(max_abs_error, o.max_abs_error);
  max_rel_error = std::max(max_rel_error, o.max_rel_error);
}

CompareResult CompareBytes(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                           uint64_t address) {
  CompareResult r;
  const size_t n = std::min(expected.size(), actual.size());
  r.bytes_compared = n;
  // Fast path: identical ranges (the expected case) cost one memcmp.
  if (expected.size() == actual.size() && std::memcmp(expected.data(), actual.data(), n) == 0)
    return r;
  r.bytes_differing = std::max(expected.size(), actual.size()) - n;
  bool first = true;
  for (size_t i = 0; i < n; ++i) {
    if (expected[i] == actual[i]) continue;
    if (first) r.first_diff_address = address + i, first = false;
    r.bytes_differing++;
  }
  // Float view: words aligned on the device address.
  const size_t skip = size_t((4 - (address & 3)) & 3);
  for (size_t i = skip; i + 4 <= n; i += 4) {
    if (std::memcmp(&expected[i], &actual[i], 4) == 0) continue;
    float e, a;
    std::memcpy(&e, &expected[i], 4);
    std::memcpy(&a, &actual[i], 4);
    r.float_words_differing++;
    if (std::isnan(e) || std::isnan(a)) continue;
    const double abs_err = std::fabs(double(a) - double(e));
    r.max_abs_error = std::max(r.max_abs_error, abs_err);
    if (e != 0) r.max_rel_error = std::max(r.max_rel_error, abs_err / std::fabs(double(e)));
  }
  return r;
}

TimingStats SummarizeTimes(std::vector<double> us) {
  TimingStats t;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  t.min_us = us.front();
  t.max_us = us.back();
  const size_t m = us.size() / 2;
  t.median_us = us.size() % 2 ? us[m] : (us[m - 1] + us[m]) / 2;
  return t;
}

namespace {
std::string DiffText(const CompareResult& c) {
  return StrFormat(
      "%llu of %llu bytes differ, first at 0x%llx; float32 view: %llu words, max abs "
      "error %.6g, max rel error %.6g",
      static_cast<unsigned long long>(c.bytes_differing),
      static_cast<unsigned long long>(c.bytes_compared),
      static_cast<unsigned long long>(c.first_diff_address),
      static_cast<unsigned long long>(c.float_words_differing), c.max_abs_error, c.max_rel_error);
}
}  // namespace

std::string FormatLaunchOutcome(const LaunchOutcome& o) {
  std::string s =
      StrFormat("launch %llu  %s\n", static_cast<unsigned long long>(o.index), o.function.c_str());
  if (!o.attributes.empty()) s += "  launch attributes: " + o.attributes + "\n";
  if (o.ranges_relocated)
    s += StrFormat(
        "  addresses: %u of %u ranges mapped away from their captured addresses (taken in this "
        "process); pointers rewritten: %llu in parameters, %llu in memory\n",
        o.ranges_relocated, o.ranges_total,
        static_cast<unsigned long long>(o.param_words_rewritten),
        static_cast<unsigned long long>(o.memory_words_rewritten));
  else if (o.ranges_total)
    s += StrFormat("  addresses: all %u ranges at their captured addresses\n", o.ranges_total);
  if (o.vs_capture.identical()) {
    s += StrFormat("  output: identical to the capture (%s compared)\n",
                   HumanBytes(o.vs_capture.bytes_compared).c_str());
  } else {
    s += "  output: DIFFERENT from the capture: " + DiffText(o.vs_capture) + "\n";
  }
  if (o.iterations > 1) {
    if (o.iterations_differing == 0) {
      s += StrFormat("  determinism: %u replays, all outputs identical\n", o.iterations);
    } else {
      s +=
          StrFormat("  determinism: NONDETERMINISTIC: %u of %u replays differ from the first: %s\n",
                    o.iterations_differing, o.iterations, DiffText(o.vs_first_replay).c_str());
    }
  }
  if (o.external_writes)
    s += StrFormat(
        "  between launches: %llu image(s) restored (written in the program by copies, memsets "
        "or kernels that were not recorded)\n",
        static_cast<unsigned long long>(o.external_writes));
  if (o.sequence) {
    // Restores between launches are inside the timed span: no comparison
    // with the kernels' time in the program.
    if (o.ranges_not_compared)
      s += StrFormat(
          "  final memory: %u range(s) not compared (a replayed copy or memset wrote them after "
          "their last recorded launch; the capture has no image of that)\n",
          o.ranges_not_compared);
    s += StrFormat(
        "  sequence time (host clock, issue to completion, image restores included): median %.2f "
        "us, min %.2f us, "
        "max %.2f us over %u replays; kernels in the program: %.2f us in all\n",
        o.time.median_us, o.time.min_us, o.time.max_us, o.iterations,
        double(o.recorded_ns) / 1000.0);
    return s;
  }
  s += StrFormat("  kernel time (%s): median %.2f us, min %.2f us, max %.2f us over %u replays",
                 o.time_from_cupti ? "CUPTI" : "CUDA events", o.time.median_us, o.time.min_us,
                 o.time.max_us, o.iterations);
  if (o.recorded_ns)
    s +=
        StrFormat("; in the program: %.2f us (replay/program %.3f)", double(o.recorded_ns) / 1000.0,
                  o.time.median_us * 1000.0 / double(o.recorded_ns));
  s += "\n";
  if (o.time_from_cupti)
    s += StrFormat("  CUDA events around the launch: median %.2f us\n", o.event_time.median_us);
  if (o.setup_ms > 0)
    s += StrFormat("  setup: %.1f ms (load module, restore inputs)\n", o.setup_ms);
  return s;
}

}  // namespace tracesmith::replay
