#include "memory_steps.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <iterator>
#include <map>
#include <unordered_map>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/path.h"
#include "tracesmith/model/stack_builder.h"
#include "tracesmith/timeline/call_site.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {
namespace {

bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

// "Linear.forward" -> "forward" (Python frames carry qualified names).
std::string_view LastName(std::string_view fn) {
  const size_t dot = fn.rfind('.');
  return dot == std::string_view::npos ? fn : fn.substr(dot + 1);
}

// A Python file as the evidence shows it: an installed package's from the
// package down ("torch/nn/modules/module.py"), another by its name.
std::string ShownFile(std::string_view file) {
  std::string shown = PackagePath(file);
  return shown.size() == file.size() ? std::string(FileNameOf(file)) : shown;
}

std::string PythonPhase(std::string_view fn, std::string_view file) {
  const std::string_view name = LastName(fn);
  if (Contains(file, "torch/optim/")) return "optimizer";
  if ((name == "backward" &&
       (file.ends_with("torch/_tensor.py") || Contains(file, "torch/autograd/"))) ||
      (name == "grad" && Contains(file, "torch/autograd/")))
    return "backward";
  if (name == "forward" || ((name == "_call_impl" || name == "_wrapped_call_impl") &&
                            file.ends_with("torch/nn/modules/module.py")))
    return "forward";
  return "";
}

// Native frames, and torch.profiler's op names in the stacks the Kineto
// importer gives its [memory] events.
std::string NativePhase(std::string_view fn) {
  if (fn.starts_with("torch::optim::") || fn.starts_with("Optimizer.")) return "optimizer";
  if (fn.starts_with("autograd::engine::evaluate_function")) return "backward";
  if (fn.starts_with("torch::autograd::backward(") || fn.starts_with("torch::autograd::grad(") ||
      Contains(fn, "torch::autograd::Engine::execute"))
    return "backward";
  return "";
}

}  // namespace

Status ProcessSteps::Read(format::SbtReader& reader, uint32_t pid) {
  return Read(*format::ReaderSource(reader, std::string()), pid);
}

Status ProcessSteps::Read(format::TraceSource& reader, uint32_t pid) {
  *this = ProcessSteps{};
  // Step ranges: the process's NVTX ranges, as analyze reads them (one
  // process alone keeps its own clock, the clock of its allocations).
  {
    CompactTrace t;
    t.SetProcessFilter(pid);
    RETURN_IF_ERROR(reader.Stream(
        [&](const model::Trace& batch, model::TableKind kind) {
          t.Ingest(batch, kind);
          return OkStatus();
        },
        [&](const model::Trace& batch) {
          t.IngestMetadata(batch);
          return OkStatus();
        },
        [](model::TableKind kind) { return kind == model::TableKind::kNvtxRange; }));
    t.Finalize();
    report_ = DetectStepRanges(t);
  }
  if (!report_.steps.empty()) {
    warmup_ = WarmupSteps(report_);
    for (const Step& s : report_.steps) spans_.push_back({s.begin_ns, s.end_ns});
    bounds_ = "NVTX ranges";  // ranges the program opened on the host
    return OkStatus();
  }
  // Else the repeating kernel sequence of the process's busiest GPU (most
  // kernels, the lowest device among equals, as analyze picks it): its
  // kernels counted, then kept, 24 bytes each.
  auto kernel_pass = [&](const std::function<void(const model::KernelEvent&)>& fn,
                         const std::function<void(const model::Trace&)>& end = {}) {
    return reader.Stream(
        [&](const model::Trace& batch, model::TableKind) {
          for (const model::KernelEvent& k : batch.Rows<model::KernelEvent>())
            if (k.pid == pid) fn(k);
          return OkStatus();
        },
        [&](const model::Trace& batch) {
          if (end) end(batch);
          return OkStatus();
        },
        [](model::TableKind kind) { return kind == model::TableKind::kKernel; });
  };
  std::map<uint32_t, uint64_t> per_device;
  RETURN_IF_ERROR(kernel_pass([&](const model::KernelEvent& k) { ++per_device[k.device_id]; }));
  uint32_t device = 0;
  uint64_t busiest = 0;
  for (const auto& [d, n] : per_device)
    if (n > busiest) busiest = n, device = d;
  if (busiest == 0) return OkStatus();
  std::vector<SequenceKernel> kernels;
  kernels.reserve(busiest);
  model::StringTable strings;
  RETURN_IF_ERROR(kernel_pass(
      [&](const model::KernelEvent& k) {
        if (k.device_id != device) return;
        // As CompactTrace keeps them: the demangled name (the mangled one
        // without it), an end never before the start.
        kernels.push_back({k.start_ns, std::max(k.start_ns, k.end_ns),
                           k.demangled_id ? k.demangled_id : k.name_id, k.correlation_id});
      },
      [&](const model::Trace& meta) { strings = meta.strings; }));
  if (!StepsFromKernelSequence(&kernels, &report_,
                               [&](uint32_t name) { return strings.Get(name); }))
    return OkStatus();
  StepStatistics(&report_);
  warmup_ = WarmupSteps(report_);
  const std::vector<Step>& steps = report_.steps;
  // Each step's first kernel (a step begins where one starts) and the last
  // step's last kernel, by correlation id, then their launch calls.
  auto first_at = [&](uint64_t ts) {
    return std::lower_bound(kernels.begin(), kernels.end(), ts,
                            [](const SequenceKernel& k, uint64_t t) { return k.start_ns < t; });
  };
  std::vector<uint32_t> first;
  for (const Step& s : steps) {
    auto it = first_at(s.begin_ns);
    first.push_back(it != kernels.end() && it->start_ns == s.begin_ns ? it->correlation_id : 0);
  }
  auto end_it = first_at(steps.back().end_ns);
  const uint32_t last = end_it != kernels.begin() ? std::prev(end_it)->correlation_id : 0;
  kernels = {};
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> calls;  // correlation -> call
  for (uint32_t c : first)
    if (c) calls.emplace(c, std::pair<uint64_t, uint64_t>{0, 0});
  if (last) calls.emplace(last, std::pair<uint64_t, uint64_t>{0, 0});
  if (!calls.empty())
    RETURN_IF_ERROR(reader.Stream(
        [&](const model::Trace& batch, model::TableKind) {
          for (const model::ApiEvent& a : batch.Rows<model::ApiEvent>()) {
            if (a.pid != pid || a.start_ns == 0) continue;
            auto it = calls.find(a.correlation_id);
            if (it != calls.end() && (it->second.first == 0 || a.start_ns < it->second.first))
              it->second = {a.start_ns, a.end_ns};
          }
          return OkStatus();
        },
        {}, [](model::TableKind kind) { return kind == model::TableKind::kApi; }));
  auto launched = [&](uint32_t c) { return c && calls[c].first != 0; };
  bool all = launched(last);
  for (uint32_t c : first) all = all && launched(c);
  if (!all) {  // no launch calls in the trace (or not for every step): the GPU's times
    for (const Step& s : steps) spans_.push_back({s.begin_ns, s.end_ns});
    bounds_ = "GPU times";
    return OkStatus();
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const uint64_t begin = std::max(calls[first[i]].first, i ? spans_.back().first : 0);
    const uint64_t end = i + 1 < steps.size() ? std::max(begin, calls[first[i + 1]].first)
                                              : std::max(begin, calls[last].second);
    spans_.push_back({begin, end});
  }
  bounds_ = "launch calls";
  return OkStatus();
}

MemorySteps ProcessSteps::Summary() const {
  MemorySteps s;
  s.method = report_.method;
  s.count = uint32_t(report_.steps.size());
  s.warmup = warmup_;
  s.bounds = bounds_;
  return s;
}

StepPlace ProcessSteps::Place(uint64_t ts) const {
  StepPlace p;
  if (spans_.empty()) return p;
  const uint32_t first = report_.first_number;
  auto it = std::upper_bound(spans_.begin(), spans_.end(), ts,
                             [](uint64_t t, const auto& s) { return t < s.first; });
  if (it == spans_.begin()) {
    p.where = StepPlace::kBefore;
    p.step = first;
    return p;
  }
  const size_t i = size_t(it - spans_.begin()) - 1;
  const bool last = i + 1 == spans_.size();
  p.step = first + uint32_t(i);
  if (ts < spans_[i].second || (last && ts == spans_[i].second)) {
    p.where = StepPlace::kInStep;
    p.warmup = i < warmup_;
  } else {
    p.where = last ? StepPlace::kAfter : StepPlace::kBetween;
  }
  return p;
}

std::pair<std::string, std::string> PhaseOfStack(const model::Trace& meta, uint32_t stack_id) {
  if (!stack_id) return {};
  const auto& table = meta.Rows<model::Frame>();
  std::vector<const model::Frame*> frames;  // leaf first
  for (uint32_t id : model::StackFrames(meta, stack_id))
    if (id && id <= table.size()) frames.push_back(&table[id - 1]);
  auto fn = [&](const model::Frame& f) { return meta.strings.Get(f.function_id); };
  for (const model::Frame* f : frames)
    if (f->kind != model::kFramePython && Contains(fn(*f), kAutogradThread))
      return {"backward", "allocated on the autograd engine's thread"};
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {  // outermost first
    const model::Frame& f = **it;
    if (f.kind != model::kFramePython) continue;
    const std::string_view file = meta.strings.Get(f.file_id);
    std::string phase = PythonPhase(fn(f), file);
    if (!phase.empty())
      return {phase, StrFormat("allocated under %s (%s:%u)", std::string(fn(f)).c_str(),
                               ShownFile(file).c_str(), f.line)};
  }
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    if ((*it)->kind == model::kFramePython) continue;
    const std::string_view name = fn(**it);
    std::string phase = NativePhase(name);
    if (!phase.empty())
      return {phase, "allocated under " + std::string(name.substr(0, name.find('(')))};
  }
  return {};
}

std::string PhaseOfRangeName(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const bool backward = Contains(lower, "backward"), optimizer = Contains(lower, "optim"),
             forward = Contains(lower, "forward");
  if (int(backward) + int(optimizer) + int(forward) != 1) return "";
  return backward ? "backward" : optimizer ? "optimizer" : "forward";
}

std::string StepPlaceText(const StepPlace& p) {
  const std::string words = p.phase == "optimizer" ? "optimizer update" : p.phase;
  const std::string a_phase = words.empty() ? ""
                                            : (p.phase == "optimizer" ? "an " : "a ") + words +
                                                  (p.phase == "optimizer" ? "" : " pass");
  switch (p.where) {
    case StepPlace::kInStep:
      return "in step " + std::to_string(p.step) + (words.empty() ? "" : "'s " + words) +
             (p.warmup ? " (the warm-up)" : "");
    case StepPlace::kBefore:
      return "before step " + std::to_string(p.step) + (words.empty() ? "" : ", in " + a_phase);
    case StepPlace::kBetween:
      return "between steps " + std::to_string(p.step) + " and " + std::to_string(p.step + 1) +
             (words.empty() ? "" : ", in " + a_phase);
    case StepPlace::kAfter:
      return "after step " + std::to_string(p.step) + ", the last" +
             (words.empty() ? "" : ", in " + a_phase);
    case StepPlace::kNoSteps:
      return words.empty() ? "" : "in " + a_phase;
  }
  return "";
}

}  // namespace tracesmith::analysis
