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

void TimedSamples::Summarize(TimingStats* time, TimingStats* event_time, bool* from_cupti) const {
  *event_time = SummarizeTimes(event_us);
  *from_cupti = cupti_us.size() == event_us.size() && !cupti_us.empty();
  *time = *from_cupti ? SummarizeTimes(cupti_us) : *event_time;
}

void RunVsFirst::Close(LaunchOutcome* out) const {
  if (!differs_) return;
  out->iterations_differing++;
  out->vs_first_replay.Merge(merged_);
}

void AddVaryingBits(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                    std::vector<uint8_t>* mask) {
  const size_t n = std::min(expected.size(), actual.size());
  if (expected.size() == actual.size() && std::memcmp(expected.data(), actual.data(), n) == 0)
    return;  // the common case: nothing varied
  mask->resize(std::max({mask->size(), expected.size(), actual.size()}), 0);
  for (size_t i = 0; i < n; ++i) (*mask)[i] |= uint8_t(expected[i] ^ actual[i]);
  for (size_t i = n; i < std::max(expected.size(), actual.size()); ++i) (*mask)[i] = 0xff;
}

uint64_t BytesDifferingBeyond(std::span<const uint8_t> expected, std::span<const uint8_t> actual,
                              std::span<const uint8_t> mask) {
  const size_t n = std::min(expected.size(), actual.size());
  uint64_t count = std::max(expected.size(), actual.size()) - n;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t varied = i < mask.size() ? mask[i] : 0;
    count += ((expected[i] ^ actual[i]) & ~varied) != 0;
  }
  return count;
}

const char* IdempotenceName(Idempotence i) {
  switch (i) {
    case Idempotence::kIdempotent:
      return "idempotent";
    case Idempotence::kNotIdempotent:
      return "not_idempotent";
    case Idempotence::kUnknown:
      return "unknown";
    case Idempotence::kNotChecked:
      break;
  }
  return "not_checked";
}

Idempotence JudgeIdempotence(const IdempotenceCheck& c) {
  if (c.rerun_vs_outputs.identical()) return Idempotence::kIdempotent;
  // One replay measured no nondeterminism: every difference is unexplained.
  if (c.replays < 2) return Idempotence::kUnknown;
  return c.bytes_beyond_nondeterminism ? Idempotence::kNotIdempotent : Idempotence::kUnknown;
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
// "; in the program: T us (replay/program R)", or "" when unknown.
std::string ProgramTimeText(uint64_t recorded_ns, double median_us) {
  if (!recorded_ns) return "";
  return StrFormat("; in the program: %.2f us (replay/program %.3f)", double(recorded_ns) / 1000.0,
                   median_us * 1000.0 / double(recorded_ns));
}

// --warm: the idempotence verdict, then the warm times (compared with the
// program only when the warm runs repeated the program's work).
std::string WarmTimingText(const LaunchOutcome& o) {
  const LaunchOutcome::WarmTiming& w = o.warm;
  const CompareResult& c = w.check.rerun_vs_outputs;
  const Idempotence verdict = w.idempotence();
  const std::string changed =
      StrFormat("re-run on its own outputs, it changed %llu of the %llu bytes compared",
                static_cast<unsigned long long>(c.bytes_differing),
                static_cast<unsigned long long>(c.bytes_compared));
  std::string s;
  const char* label = "warm L2";
  switch (verdict) {
    case Idempotence::kIdempotent:
      s = "  idempotent: re-run on its own outputs, it wrote them again bit for bit\n";
      break;
    case Idempotence::kNotIdempotent:
      s = StrFormat(
          "  NOT IDEMPOTENT: %s (%llu of them in bits that the %u replays from the captured inputs "
          "never changed): its warm runs computed on other data than the program's launch\n",
          changed.c_str(), static_cast<unsigned long long>(w.check.bytes_beyond_nondeterminism),
          w.check.replays);
      label = "warm L2, on changed inputs, not comparable with the program";
      break;
    case Idempotence::kUnknown:
      s = w.check.replays < 2
              ? StrFormat(
                    "  idempotence unknown: %s; one replay from the captured inputs cannot tell "
                    "that from nondeterminism (--iterations 2 or more)\n",
                    changed.c_str())
              : StrFormat(
                    "  idempotence unknown: %s, all in bits that also varied between the %u "
                    "replays from the captured inputs (nondeterminism)\n",
                    changed.c_str(), w.check.replays);
      label = "warm L2, inputs not verified";
      break;
    case Idempotence::kNotChecked:
      break;
  }
  s += StrFormat(
      "  kernel time, %s (%s): median %.2f us, min %.2f us, max %.2f us over %u back-to-back "
      "runs",
      label, w.time_from_cupti ? "CUPTI" : "CUDA events", w.time.median_us, w.time.min_us,
      w.time.max_us, w.runs);
  if (verdict == Idempotence::kIdempotent) s += ProgramTimeText(o.recorded_ns, w.time.median_us);
  s += "\n";
  if (w.time_from_cupti)
    s +=
        StrFormat("  CUDA events around the warm launch: median %.2f us\n", w.event_time.median_us);
  return s;
}
}  // namespace

std::vector<std::string> GraphNodeLines(const format::GraphLaunchRecord& g) {
  std::vector<std::string> out;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const format::GraphNodeRecord& n = g.nodes[k];
    std::string line = StrFormat("node %zu: %s", k, format::GraphNodeKindName(n.kind));
    if (n.kind == format::GraphNodeKind::kKernel) {
      line += " " + n.kernel.function;
    } else if (n.kind == format::GraphNodeKind::kMemset) {
      line += StrFormat(" %s at 0x%llx", HumanBytes(n.Written().size).c_str(),
                        static_cast<unsigned long long>(n.dst));
    } else if (n.kind == format::GraphNodeKind::kMemcpy) {
      line +=
          StrFormat(" %s 0x%llx -> 0x%llx", HumanBytes(n.width * n.height).c_str(),
                    static_cast<unsigned long long>(n.src), static_cast<unsigned long long>(n.dst));
    }
    if (!n.dependencies.empty()) {
      line += " (after ";
      for (size_t d = 0; d < n.dependencies.size(); ++d)
        line += (d ? ", " : "") + std::to_string(n.dependencies[d]);
      line += ")";
    }
    out.push_back(std::move(line));
  }
  return out;
}

std::string FormatLaunchOutcome(const LaunchOutcome& o) {
  std::string s =
      StrFormat("launch %llu  %s\n", static_cast<unsigned long long>(o.index), o.function.c_str());
  if (!o.attributes.empty()) s += "  launch attributes: " + o.attributes + "\n";
  if (o.graph.is_graph && o.graph.node >= 0)
    s += StrFormat(
        "  graph node: its outputs are checked through the graph's final memory (the other %u "
        "node(s) run after its last replay); the replays of the node alone are compared with "
        "each other\n",
        o.graph.nodes - 1 - o.graph.ancestors);
  else if (o.graph.is_graph) {
    s += "  graph: replayed as one unit (rebuilt from its nodes, instantiated once, launched "
         "with cuGraphLaunch)\n";
    constexpr size_t kMaxListed = 64;  // a large graph: the first ones (--node K takes any)
    for (size_t k = 0; k < o.graph.node_lines.size() && k < kMaxListed; ++k)
      s += "  " + o.graph.node_lines[k] + "\n";
    if (o.graph.node_lines.size() > kMaxListed)
      s += StrFormat("  ... %zu more node(s)\n", o.graph.node_lines.size() - kMaxListed);
  }
  if (o.ranges_relocated)
    s += StrFormat(
        "  addresses: %u of %u ranges mapped away from their captured addresses (taken in this "
        "process); pointers rewritten: %llu in parameters, %llu in memory\n",
        o.ranges_relocated, o.ranges_total,
        static_cast<unsigned long long>(o.param_words_rewritten),
        static_cast<unsigned long long>(o.memory_words_rewritten));
  else if (o.ranges_total)
    s += StrFormat("  addresses: all %u ranges at their captured addresses\n", o.ranges_total);
  s += FormatLaunchMemory(o.memory);
  if (o.vs_capture.identical()) {
    s += StrFormat("  output: identical to the capture (%s compared)\n",
                   HumanBytes(o.vs_capture.bytes_compared).c_str());
  } else {
    s += "  output: DIFFERENT from the capture: " + DiffText(o.vs_capture) + "\n";
    if (std::string hint = MissingMemoryHint(o.memory); !hint.empty())
      s += "  memory: " + hint + "\n";
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
        "  sequence time (host clock, issue to completion, image restores included%s): median %.2f "
        "us, min %.2f us, "
        "max %.2f us over %u replays; kernels in the program: %.2f us in all\n",
        o.l2_flushed ? ", from a flushed L2" : "", o.time.median_us, o.time.min_us, o.time.max_us,
        o.iterations, double(o.recorded_ns) / 1000.0);
    s += FormatKernelProfile(o.profile);
    return s;
  }
  s += StrFormat("  %s time, %s (%s): median %.2f us, min %.2f us, max %.2f us over %u replays",
                 o.graph.is_graph && o.graph.node < 0 ? "graph" : "kernel",
                 o.l2_flushed ? "cold L2" : "inputs restored, L2 not flushed",
                 o.time_from_cupti ? "CUPTI" : "CUDA events", o.time.median_us, o.time.min_us,
                 o.time.max_us, o.iterations);
  s += ProgramTimeText(o.recorded_ns, o.time.median_us) + "\n";
  if (o.time_from_cupti)
    s += StrFormat("  CUDA events around the launch: median %.2f us\n", o.event_time.median_us);
  if (o.warm.runs) s += WarmTimingText(o);
  if (o.setup_ms > 0)
    s += StrFormat("  setup: %.1f ms (load module, restore inputs)\n", o.setup_ms);
  s += FormatKernelProfile(o.profile);
  return s;
}

}  // namespace tracesmith::replay
