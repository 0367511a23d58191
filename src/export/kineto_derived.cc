#include "kineto_derived.h"

#include <algorithm>

namespace tracesmith::exporter {

using namespace model;

namespace {
constexpr uint64_t kRangeIdOffset = uint64_t{1} << 47;
}  // namespace

void KinetoDerived::Begin(const ExportContext& ctx) {
  ctx_ = &ctx;
  base_ = ctx.max_external_id + 1;
}

uint64_t KinetoDerived::OnNvtxRange(const NvtxRangeEvent& r, std::string_view name, bool captured) {
  const analysis::StepRange kind = analysis::StepRangeKind(name);
  // An imported torch trace is written back as torch wrote it: without
  // steps when it had none.
  if (kind == analysis::StepRange::kProfilerStep || !captured) has_profiler_steps_ = true;
  if (!captured) return 0;
  const uint64_t id = base_ + kRangeIdOffset + ranges_.size();
  const uint64_t end = std::max(r.start_ns, r.end_ns);
  if (kind == analysis::StepRange::kProgram)
    step_ranges_.push_back({r.start_ns, end, id, r.pid, r.tid, r.name_id, 0});
  // Its parent: the innermost range open on the thread that contains it.
  std::vector<Open>& open = open_[Key(r.pid, r.tid)];
  std::erase_if(open, [&](const Open& o) { return o.end_ns < r.start_ns; });
  uint32_t parent = 0;
  for (auto o = open.rbegin(); o != open.rend() && parent == 0; ++o)
    if (o->end_ns >= end) parent = o->range + 1;
  open.push_back({end, static_cast<uint32_t>(ranges_.size())});
  ranges_.push_back({r.start_ns, end, id, r.pid, r.tid, r.name_id, parent});
  return id;
}

void KinetoDerived::OnAppRange(const AppEvent& e, std::string_view name) {
  const analysis::StepRange kind = analysis::StepRangeKind(name);
  if (kind == analysis::StepRange::kProfilerStep) has_profiler_steps_ = true;
  if (kind == analysis::StepRange::kProgram)
    step_ranges_.push_back(
        {e.start_ns, std::max(e.start_ns, e.end_ns), 0, e.pid, e.tid, e.name_id, 0});
}

void KinetoDerived::OnApiCall(const ApiEvent& a) {
  if (!ctx_->Linked(a.pid, a.correlation_id)) return;  // not a launch with a GPU op
  launches_[Key(a.pid, a.correlation_id)] = {a.tid, a.start_ns, std::max(a.start_ns, a.end_ns)};
  auto it = open_.find(Key(a.pid, a.tid));
  if (it == open_.end()) return;
  // Events come in start order: every range still open here began before
  // the call; the ones that ended before it are done.
  std::erase_if(it->second, [&](const Open& o) { return o.end_ns < a.start_ns; });
  if (it->second.empty()) return;
  // The innermost (the last opened); its parents follow from it.
  const uint32_t idx = ctx_->correlations.PidIndex(a.pid);
  if (idx >= innermost_.size()) innermost_.resize(idx + 1);
  innermost_[idx].Set(a.correlation_id, it->second.back().range + 1);
  any_inside_ = true;
}

void KinetoDerived::OnAnnotatedLaunch(uint32_t pid, uint32_t corr, uint64_t external_id,
                                      std::string_view name) {
  auto [it, added] =
      annotation_index_.try_emplace(external_id, static_cast<uint32_t>(annotations_.size()));
  if (added) annotations_.emplace_back(std::string(name), external_id);
  const uint32_t idx = ctx_->correlations.PidIndex(pid);
  if (idx >= annotated_launches_.size()) annotated_launches_.resize(idx + 1);
  annotated_launches_[idx].Set(corr, uint64_t{it->second} + 1);
}

void KinetoDerived::OnGpuOp(uint32_t pid, uint32_t corr, uint32_t device, uint32_t stream,
                            uint64_t start, uint64_t end) {
  if (corr == 0) return;
  const uint32_t idx = ctx_->correlations.PidIndex(pid);
  if (const uint64_t a =
          idx < annotated_launches_.size() ? annotated_launches_[idx].Get(corr) : 0) {
    auto [span, added] = annotation_spans_.try_emplace({uint32_t(a - 1), device, stream}, start,
                                                       std::max(start, end));
    span->second.first = std::min(span->second.first, start);
    span->second.second = std::max(span->second.second, std::max(start, end));
  }
  launches_.erase(Key(pid, corr));  // a kernel took it along first (OnKernel)
  if (!any_inside_) return;
  uint32_t next = idx < innermost_.size() ? static_cast<uint32_t>(innermost_[idx].Get(corr)) : 0;
  end = std::max(start, end);
  for (; next != 0; next = ranges_[next - 1].parent) {
    const uint32_t range = next - 1;
    auto [span, added] = gpu_spans_.try_emplace({range, device, stream}, start, end);
    if (added) continue;
    span->second.first = std::min(span->second.first, start);
    span->second.second = std::max(span->second.second, end);
  }
}

void KinetoDerived::OnKernel(const KernelEvent& k) {
  if (last_kernels_ == nullptr || last_gpu_ != std::pair{k.pid, k.device_id}) {
    last_gpu_ = {k.pid, k.device_id};
    last_kernels_ = &kernels_[last_gpu_];
  }
  StepKernel s{k.start_ns,
               std::max(k.start_ns, k.end_ns),
               k.demangled_id ? k.demangled_id : k.name_id,
               UINT32_MAX,
               0,
               0,
               k.stream_id};
  if (k.correlation_id != 0) {
    auto l = launches_.find(Key(k.pid, k.correlation_id));
    if (l != launches_.end()) {
      s.tid = l->second.tid;
      s.launch_start_ns = l->second.start_ns;
      const uint64_t call_ns = l->second.end_ns > l->second.start_ns
                                   ? l->second.end_ns - l->second.start_ns
                                   : 0;  // an end before the start: no duration
      s.launch_ns = static_cast<uint32_t>(std::min<uint64_t>(call_ns, UINT32_MAX));
    }
  }
  last_kernels_->push_back(s);
}

std::vector<KinetoDerived::Slice> KinetoDerived::Finish(const Trace& meta) {
  std::vector<Slice> out;
  StepSlices(meta, &out);
  for (const auto& [key, span] : gpu_spans_) {
    const auto& [range, device, stream] = key;
    const Range& r = ranges_[range];
    out.push_back({"gpu_user_annotation", std::string(meta.strings.Get(r.name_id)), device, stream,
                   span.first, span.second, r.external_id});
  }
  for (const auto& [key, span] : annotation_spans_) {
    const auto& [index, device, stream] = key;
    const auto& [name, external_id] = annotations_[index];
    out.push_back(
        {"gpu_user_annotation", name, device, stream, span.first, span.second, external_id});
  }
  return out;
}

// Steps as torch.profiler marks them: a "ProfilerStep#N" user_annotation on
// the host, numbered from 0. From the program's own step ranges (on their
// thread, as long as they are) when it has at least 3; else from the
// repeating kernel sequence of the busiest GPU (analysis/steps.h): a step
// begins on the host where the launch of its first kernel begins and lasts
// until the next step's does (the last one: its last launch's end), all on
// one thread: the one that launches most steps' first kernel.
void KinetoDerived::StepSlices(const Trace& meta, std::vector<Slice>* out) {
  if (has_profiler_steps_) return;
  auto step_name = [](size_t i) { return "ProfilerStep#" + std::to_string(i); };
  // One range per step name, the earliest (as analysis's FromStepRanges).
  std::map<std::string_view, const Range*> by_name;
  for (const Range& r : step_ranges_) {
    auto [it, added] = by_name.try_emplace(meta.strings.Get(r.name_id), &r);
    if (!added && r.start_ns < it->second->start_ns) it->second = &r;
  }
  if (by_name.size() >= 3) {
    std::vector<const Range*> steps;
    for (const auto& [name, r] : by_name) steps.push_back(r);
    std::sort(steps.begin(), steps.end(),
              [](const Range* a, const Range* b) { return a->start_ns < b->start_ns; });
    for (size_t i = 0; i < steps.size(); ++i)
      out->push_back({"user_annotation", step_name(i), steps[i]->pid, steps[i]->tid,
                      steps[i]->start_ns, steps[i]->end_ns, 0});
    return;
  }
  const std::vector<StepKernel>* gpu = nullptr;
  uint32_t pid = 0, device = 0;
  for (const auto& [key, list] : kernels_)
    if (gpu == nullptr || list.size() > gpu->size())
      gpu = &list, pid = key.first, device = key.second;
  if (gpu == nullptr) return;
  // The sequence's "correlation id" is the kernel's index in `gpu`.
  std::vector<analysis::SequenceKernel> kernels;
  kernels.reserve(gpu->size());
  for (uint32_t i = 0; i < gpu->size(); ++i)
    kernels.push_back({(*gpu)[i].start_ns, (*gpu)[i].end_ns, (*gpu)[i].name_id, i});
  analysis::StepReport report;
  if (!analysis::StepsFromKernelSequence(&kernels, &report,
                                         [&](uint32_t id) { return meta.strings.Get(id); }))
    return;
  struct HostStep {
    uint64_t begin = UINT64_MAX, end = 0;
    uint32_t tid = 0;  // of the first launch
    bool launched = false;
  };
  std::vector<HostStep> host(report.steps.size());
  // Each step's kernels: [first, last) in `kernels`.
  std::vector<std::pair<size_t, size_t>> step_kernels(report.steps.size());
  std::map<uint32_t, uint64_t> per_tid;  // steps whose first launch is on the thread
  auto k = kernels.begin();              // in start order (StepsFromKernelSequence sorted them)
  for (size_t i = 0; i < report.steps.size(); ++i) {
    const analysis::Step& s = report.steps[i];
    while (k != kernels.end() && k->start_ns < s.begin_ns) ++k;
    step_kernels[i].first = static_cast<size_t>(k - kernels.begin());
    for (; k != kernels.end() && k->start_ns < s.end_ns; ++k) {
      const StepKernel& l = (*gpu)[k->correlation_id];
      if (l.tid == UINT32_MAX) continue;  // its launch not seen
      if (l.launch_start_ns < host[i].begin) host[i].tid = l.tid;
      host[i].begin = std::min(host[i].begin, l.launch_start_ns);
      host[i].end = std::max(host[i].end, l.launch_end_ns());
      host[i].launched = true;
    }
    step_kernels[i].second = static_cast<size_t>(k - kernels.begin());
    if (host[i].launched)
      ++per_tid[host[i].tid];
    else
      host[i] = {s.begin_ns, s.end_ns, pid, false};  // the GPU's span
  }
  // All steps on one row: the thread where most of them launch their first
  // kernel (the training loop's; the main thread when no launch was seen).
  uint32_t tid = pid;
  uint64_t most = 0;
  for (const auto& [t, n] : per_tid)
    if (n > most) most = n, tid = t;
  for (size_t i = 0; i < host.size(); ++i) {
    uint64_t end = host[i].end;
    if (i + 1 < host.size() && host[i + 1].begin > host[i].begin) end = host[i + 1].begin;
    out->push_back({"user_annotation", step_name(i), pid, tid, host[i].begin,
                    std::max(end, host[i].begin), 0});
  }
  // Their GPU copies: per stream, the kernels launched on that thread.
  for (size_t i = 0; i < host.size(); ++i) {
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> spans;  // stream -> [start, end]
    for (size_t n = step_kernels[i].first; n < step_kernels[i].second; ++n) {
      const StepKernel& l = (*gpu)[kernels[n].correlation_id];
      if (l.tid != tid) continue;
      auto [span, added] = spans.try_emplace(l.stream, l.start_ns, l.end_ns);
      span->second.first = std::min(span->second.first, l.start_ns);
      span->second.second = std::max(span->second.second, l.end_ns);
    }
    for (const auto& [stream, span] : spans)
      out->push_back(
          {"gpu_user_annotation", step_name(i), device, stream, span.first, span.second, 0});
  }
}

}  // namespace tracesmith::exporter
