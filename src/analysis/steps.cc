#include "tracesmith/analysis/steps.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string_view>
#include <tuple>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/statistics.h"
#include "tracesmith/timeline/timeline.h"

namespace tracesmith::analysis {
namespace {

constexpr size_t kMinSteps = 3;

// Measures the steps from `from` on (those before it come measured) and the run's statistics.
// Each step's busy time and kernels are differences of two running totals at its bounds
// (busy time and kernel starts before t), taken at every bound in one sweep of the GPUs'
// busy union and one pass over the kernels: neither the union (16 bytes per interval) nor
// the kernels' starts (8 bytes per kernel) are kept. Steps end at or after their begin.
void Measure(const CompactTrace& t, StepReport* r, size_t from = 0) {
  std::vector<uint64_t> bounds;
  for (size_t i = from; i < r->steps.size(); ++i) {
    bounds.push_back(r->steps[i].begin_ns);
    bounds.push_back(r->steps[i].end_ns);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  // Busy time of every GPU together, within the window, before each bound.
  std::vector<uint64_t> busy_before(bounds.size());
  size_t k = 0;
  uint64_t done = 0;
  ForEachOpUnion(
      t, t.gpu_lanes(), [](const GpuOp&) { return true; },
      [&](const Interval& b) {
        for (; k < bounds.size() && bounds[k] <= b.start; ++k) busy_before[k] = done;
        for (; k < bounds.size() && bounds[k] < b.end; ++k)
          busy_before[k] = done + (bounds[k] - b.start);
        done += b.length();
      });
  for (; k < bounds.size(); ++k) busy_before[k] = done;
  // Kernels starting before each bound: each kernel counted at the first bound after its
  // start, then summed up.
  std::vector<uint64_t> starts_before(bounds.size() + 1, 0);
  for (const GpuOp& o : t.ops())
    if (o.kind() == OpKind::kKernel)
      ++starts_before[std::upper_bound(bounds.begin(), bounds.end(), o.start_ns) - bounds.begin()];
  for (size_t j = 1; j < starts_before.size(); ++j) starts_before[j] += starts_before[j - 1];
  auto at = [&](uint64_t bound) {
    return size_t(std::lower_bound(bounds.begin(), bounds.end(), bound) - bounds.begin());
  };
  for (size_t i = from; i < r->steps.size(); ++i) {
    Step& s = r->steps[i];
    const size_t b = at(s.begin_ns), e = at(s.end_ns);
    s.gpu_busy_ns += busy_before[e] - busy_before[b];
    s.kernels = uint32_t(int64_t(starts_before[e]) - int64_t(starts_before[b]));
  }
  StepStatistics(r);
}

}  // namespace

void StepStatistics(StepReport* r) {
  r->outliers.clear();
  std::vector<uint64_t> ns;
  for (const Step& s : r->steps) ns.push_back(s.ns());
  std::vector<uint64_t> sorted = ns;
  std::sort(sorted.begin(), sorted.end());
  r->median_ns = sorted[(sorted.size() - 1) / 2];
  const double median = double(r->median_ns);
  for (size_t i = 0; i < ns.size(); ++i)
    if (double(ns[i]) > 1.5 * median || double(ns[i]) < 0.67 * median)
      r->outliers.push_back(uint32_t(i));
  // The spread of the steady steps: outliers (the warm-up) left out.
  double sum = 0, n = 0, var = 0;
  for (size_t i = 0, o = 0; i < ns.size(); ++i) {
    if (o < r->outliers.size() && r->outliers[o] == i) {
      ++o;
      continue;
    }
    sum += double(ns[i]), n += 1;
  }
  const double mean = n ? sum / n : 0;
  for (size_t i = 0, o = 0; i < ns.size(); ++i) {
    if (o < r->outliers.size() && r->outliers[o] == i) {
      ++o;
      continue;
    }
    var += (double(ns[i]) - mean) * (double(ns[i]) - mean);
  }
  r->cv = mean > 0 && n > 0 ? std::sqrt(var / n) / mean : 0;
}

// A program's own "step N" / "iteration N" style ranges: step, Step, iter,
// iteration, then ' ', '#', '_' or ':' or nothing, then the number, nothing
// after.
StepRange StepRangeKind(std::string_view name) {
  if (name.starts_with("ProfilerStep#")) return StepRange::kProfilerStep;
  size_t i = 0;
  for (std::string_view p : {"iteration", "Iteration", "step", "Step", "iter", "Iter"}) {
    if (name.starts_with(p)) {
      i = p.size();
      break;
    }
  }
  if (i == 0) return StepRange::kNone;
  if (i < name.size() && (name[i] == ' ' || name[i] == '#' || name[i] == '_' || name[i] == ':'))
    ++i;
  if (i == name.size()) return StepRange::kNone;
  for (; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return StepRange::kNone;
  return StepRange::kProgram;
}

namespace {

// Steps from ranges of one kind (StepRangeKind): torch.profiler's first, then
// the program's own.
bool FromStepRanges(const CompactTrace& t, StepReport* r) {
  for (StepRange kind : {StepRange::kProfilerStep, StepRange::kProgram}) {
    // Kineto writes each step twice (a CPU user_annotation and a GPU one), and
    // every rank has its own: one range per step name, the earliest.
    std::map<std::string_view, Step> by_name;
    for (const NvtxRecord& n : t.nvtx()) {
      std::string_view name = t.String(n.name_id);
      if (StepRangeKind(name) != kind) continue;
      auto [it, added] = by_name.try_emplace(name, Step{n.start_ns, n.end_ns});
      if (!added && n.start_ns < it->second.begin_ns) it->second = Step{n.start_ns, n.end_ns};
    }
    for (const auto& [name, step] : by_name) r->steps.push_back(step);
    if (r->steps.size() < kMinSteps) {
      r->steps.clear();
      continue;
    }
    std::sort(r->steps.begin(), r->steps.end(),
              [](const Step& a, const Step& b) { return a.begin_ns < b.begin_ns; });
    r->method = kind == StepRange::kProfilerStep ? "ProfilerStep ranges" : "NVTX step ranges";
    return true;
  }
  return false;
}

// The steps of kernels in start order (then end, then name), read through `order`:
// order.size() and order[k] with start_ns, end_ns and name_id.
template <typename Order>
bool StepsFromOrder(const Order& order, StepReport* r,
                    const std::function<std::string_view(uint32_t)>& name_of) {
  if (order.size() < 2 * kMinSteps) return false;
  // Each name's indexes into order, all names' in one array (4 bytes a kernel, no vector's
  // growth slack: 100 M kernels are 400 MB): counted, then placed. Names are string ids: a
  // table by id for the ids below kDense (a trace's strings, as written), a map for any
  // beyond (a file's ids may be anything), not a map looked up per kernel.
  constexpr uint32_t kDense = 1u << 20;
  std::vector<std::pair<uint32_t, uint32_t>> by_id;  // name id -> [begin, end) in flat
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> beyond;
  auto range_of = [&](uint32_t name) -> std::pair<uint32_t, uint32_t>& {
    if (name >= kDense) return beyond[name];
    if (name >= by_id.size()) by_id.resize(size_t(name) + 1);
    return by_id[name];
  };
  for (uint32_t k = 0; k < order.size(); ++k) ++range_of(order[k].name_id).second;
  std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>> positions;  // by name id
  uint32_t next = 0;
  auto place = [&](uint32_t name, std::pair<uint32_t, uint32_t>& range) {
    const uint32_t count = range.second;
    if (!count) return;
    range = {next, next};
    positions.push_back({name, {next, next + count}});
    next += count;
  };
  for (uint32_t name = 0; name < by_id.size(); ++name) place(name, by_id[name]);
  for (auto& [name, range] : beyond) place(name, range);
  std::vector<uint32_t> flat(order.size());
  for (uint32_t k = 0; k < order.size(); ++k) flat[range_of(order[k].name_id).second++] = k;
  std::vector<std::pair<uint32_t, uint32_t>>().swap(by_id);
  beyond.clear();
  uint32_t best_name = 0, best_period = 0;
  double best_gap = -1;
  std::vector<uint32_t> best_pos;
  for (const auto& [name, range] : positions) {
    const std::span<const uint32_t> pos(flat.data() + range.first, range.second - range.first);
    if (pos.size() < kMinSteps) continue;
    std::vector<uint32_t> gaps;
    for (size_t i = 1; i < pos.size(); ++i) gaps.push_back(pos[i] - pos[i - 1]);
    std::vector<uint32_t> sorted = gaps;
    std::sort(sorted.begin(), sorted.end());
    const uint32_t period = sorted[NearestRankIndex(sorted.size(), 0.5)];
    if (period < 2) continue;
    size_t regular = 0;
    for (uint32_t g : gaps) regular += g == period;
    // Regular stride, and the recurrences cover most of the kernels.
    if (regular * 10 < gaps.size() * 6 || uint64_t(period) * pos.size() * 2 < order.size())
      continue;
    double idle = 0;
    for (uint32_t p : pos)
      if (p > 0) {
        const auto& prev = order[p - 1];
        const auto& cur = order[p];
        idle += cur.start_ns > prev.end_ns ? double(cur.start_ns - prev.end_ns) : 0;
      }
    idle /= double(pos.size());
    if (period > best_period || (period == best_period && idle > best_gap)) {
      best_name = name, best_period = period, best_gap = idle;
      best_pos.assign(pos.begin(), pos.end());
    }
  }
  positions.clear();
  std::vector<uint32_t>().swap(flat);
  if (!best_period) return false;
  // Where in the period a step begins: after the largest GPU-idle gaps (the
  // host's work between iterations), found over all recurrences.
  auto idle_before = [&](size_t k) -> double {
    if (k == 0 || k >= order.size()) return 0;
    const auto& prev = order[k - 1];
    const auto& cur = order[k];
    return cur.start_ns > prev.end_ns ? double(cur.start_ns - prev.end_ns) : 0;
  };
  uint32_t shift = 0;
  double most = -1;
  for (uint32_t j = 0; j < best_period; ++j) {
    double sum = 0;
    for (uint32_t p : best_pos) sum += idle_before(size_t(p) + j);
    if (sum > most) most = sum, shift = j;
  }
  // Boundaries: each recurrence + shift, within the sequence; the kernels
  // before the first one make a step of their own when there are at least
  // half a period of them (the first iteration, with its one-time work), and
  // so do those after the last boundary.
  std::vector<size_t> bounds;
  for (uint32_t p : best_pos)
    if (size_t(p) + shift < order.size()) bounds.push_back(size_t(p) + shift);
  // Before the first boundary, iterations where the anchor kernel did not
  // run (an optimizer's first step taking another path): while the period
  // before it repeats the one after it (90% of the kernels by name, in
  // order), it is an iteration of its own. (A first iteration with one-time
  // work in it does not repeat the next one: it stays whole.)
  auto repeats_next = [&](size_t b) {
    if (b + best_period > order.size()) return false;
    size_t same = 0;
    for (size_t i = 0; i < best_period; ++i)
      same += order[b - best_period + i].name_id == order[b + i].name_id;
    return same * 10 >= size_t{best_period} * 9;
  };
  while (bounds.front() > best_period && repeats_next(bounds.front()))
    bounds.insert(bounds.begin(), bounds.front() - best_period);
  if (2 * bounds.front() >= best_period) bounds.insert(bounds.begin(), 0);
  const size_t tail = order.size() - bounds.back();
  bounds.push_back(order.size());
  auto start_of = [&](size_t k) { return order[k].start_ns; };
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const bool last = i + 2 == bounds.size();
    if (last && 2 * tail < best_period) break;  // a partial iteration at the end
    Step st;
    st.begin_ns = start_of(bounds[i]);
    if (!last) {
      st.end_ns = start_of(bounds[i + 1]);
    } else {
      for (size_t k = bounds[i]; k < order.size(); ++k)
        st.end_ns = std::max(st.end_ns, order[k].end_ns);
    }
    if (st.end_ns > st.begin_ns) r->steps.push_back(st);
  }
  if (r->steps.size() < kMinSteps) {
    r->steps.clear();
    return false;
  }
  r->method = "repeating kernel sequence";
  r->anchor = std::string(name_of(best_name));
  r->period = best_period;
  return true;
}

// One GPU's kernels, for FromKernelSequence: with several devices or
// processes (data parallel ranks) the merged order interleaves their
// iterations; the busiest GPU (most kernels) sets the steps for all.
bool FromKernelSequence(const CompactTrace& t, StepReport* r) {
  // Kernels per lane (a vector, not a map looked up per kernel), then per GPU.
  std::vector<uint32_t> per_lane(t.lanes().size());
  for (const GpuOp& o : t.ops()) per_lane[o.lane()] += o.kind() == OpKind::kKernel;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> per_gpu;  // (pid, device) -> kernels
  for (uint32_t l = 0; l < per_lane.size(); ++l)
    if (per_lane[l]) per_gpu[{t.lanes()[l].pid, t.lanes()[l].device}] += per_lane[l];
  std::pair<uint32_t, uint32_t> gpu{};
  uint32_t busiest = 0;
  for (const auto& [key, n] : per_gpu)
    if (n > busiest) busiest = n, gpu = key;
  // The kernels as op indexes (4 bytes each, not a 24-byte SequenceKernel), in the order
  // StepsFromKernelSequence sorts them to (kernels equal in start, end and name are alike
  // to it): each lane's ops are in (start, end) order, so a merge of the GPU's lanes, then
  // each run of equal (start, end) by name.
  const auto ops = t.ops();
  std::vector<uint32_t> lanes;
  for (uint32_t l : t.gpu_lanes())
    if (t.lanes()[l].pid == gpu.first && t.lanes()[l].device == gpu.second) lanes.push_back(l);
  auto op_before = [](const GpuOp& x, const GpuOp& y) {
    return std::tie(x.start_ns, x.end_ns) < std::tie(y.start_ns, y.end_ns);
  };
  auto before = [&](uint32_t a, uint32_t b) { return op_before(ops[a], ops[b]); };
  std::vector<uint32_t> kernels;
  kernels.reserve(busiest);
  // Whether any kernels tie in (start, end), and whether a lane was out of order, seen as
  // the merge goes: the ops are read again by index only then.
  bool ties = false, out_of_order = false;
  GpuOp last;
  ForEachOpMerged(
      t, lanes, [](const GpuOp& op) { return op.kind() == OpKind::kKernel; }, op_before,
      [&](uint32_t i, const GpuOp& op) {
        if (!kernels.empty()) {
          out_of_order |= op_before(op, last);
          ties |= !op_before(last, op);
        }
        last = op;
        kernels.push_back(i);
      });
  auto by_name = [&](uint32_t a, uint32_t b) { return ops[a].name_id < ops[b].name_id; };
  for (size_t i = 0; ties && !out_of_order && i < kernels.size();) {
    size_t j = i + 1;
    while (j < kernels.size() && !before(kernels[i], kernels[j])) ++j;
    if (j - i > 1) std::sort(kernels.begin() + i, kernels.begin() + j, by_name);
    i = j;
  }
  auto by_key = [&](uint32_t a, uint32_t b) {
    const GpuOp x = ops[a], y = ops[b];
    return std::tie(x.start_ns, x.end_ns, x.name_id) < std::tie(y.start_ns, y.end_ns, y.name_id);
  };
  if (out_of_order) std::sort(kernels.begin(), kernels.end(), by_key);  // a lane out of order
  struct OpsByIndex {
    OpView ops;
    const std::vector<uint32_t>& index;
    size_t size() const { return index.size(); }
    GpuOp operator[](size_t k) const { return ops[index[k]]; }
  };
  return StepsFromOrder(OpsByIndex{ops, kernels}, r, [&](uint32_t name) { return t.String(name); });
}

}  // namespace

// The kernel that recurs once per step: among kernels recurring at least
// kMinSteps times at a regular stride (most gaps equal to the median gap),
// the longest stride; ties go to the one after the largest GPU-idle gaps
// (steps usually begin after host work: data, zero_grad, logging).
bool StepsFromKernelSequence(std::vector<SequenceKernel>* kernels, StepReport* r,
                             const std::function<std::string_view(uint32_t)>& name_of) {
  std::vector<SequenceKernel>& order = *kernels;
  // In start order; kernels starting together by end, then name (one order
  // whatever order they came in).
  std::sort(order.begin(), order.end(), [](const SequenceKernel& a, const SequenceKernel& b) {
    return std::tie(a.start_ns, a.end_ns, a.name_id) < std::tie(b.start_ns, b.end_ns, b.name_id);
  });
  return StepsFromOrder(order, r, name_of);
}

StatusOr<std::pair<size_t, size_t>> ParseStepRange(const std::string& text, size_t count) {
  auto number = [&](const std::string& part) -> StatusOr<size_t> {
    if (part.empty() || part.size() > 9 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return InvalidArgument("--steps " + text + ": expected N or A:B (step numbers from 1)");
    return size_t(std::stoul(part));
  };
  const size_t colon = text.find(':');
  ASSIGN_OR_RETURN(size_t a, number(text.substr(0, colon)));
  size_t b = a;
  if (colon != std::string::npos) {
    ASSIGN_OR_RETURN(b, number(text.substr(colon + 1)));
  }
  if (a < 1 || b < a || b > count)
    return InvalidArgument(
        StrFormat("--steps %s: the trace has steps 1..%zu", text.c_str(), count));
  return std::make_pair(a - 1, b - 1);
}

StepReport DetectSteps(const CompactTrace& t) {
  StepReport r;
  if (t.chosen_steps().none) return r;
  if (const CompactTrace::ChosenSteps& c = t.chosen_steps(); !c.bounds.empty()) {
    // The warm-up set apart: its steps as measured before the cut, numbered from 1.
    for (const CompactTrace::ChosenSteps::Measured& w : c.warmup)
      r.steps.push_back({w.begin_ns, w.end_ns, w.gpu_busy_ns, w.kernels});
    r.warmup = uint32_t(c.warmup.size());
    for (const auto& [b, e] : c.bounds) r.steps.push_back({b, e});
    r.first_number = c.first_number - r.warmup;
    r.method = c.method;
    r.anchor = c.anchor;
    r.period = c.period;
    Measure(t, &r, r.warmup);
    return r;
  }
  if (FromStepRanges(t, &r) || FromKernelSequence(t, &r)) Measure(t, &r);
  return r;
}

StepReport DetectStepRanges(const CompactTrace& t) {
  StepReport r;
  if (FromStepRanges(t, &r)) StepStatistics(&r);
  return r;
}

std::string WarmupStepsText(const StepReport& r) {
  return r.warmup == 1 ? StrFormat("step %u", r.first_number)
                       : StrFormat("steps %u-%u", r.first_number, r.first_number + r.warmup - 1);
}

uint32_t WarmupSteps(const StepReport& r) {
  if (r.first_number != 1) return 0;  // not the run's first step
  uint32_t n = 0;
  for (uint32_t o : r.outliers) {
    if (o != n || r.steps[o].ns() <= r.median_ns) break;
    ++n;
  }
  return r.steps.size() >= n + 2 ? n : 0;
}

}  // namespace tracesmith::analysis
