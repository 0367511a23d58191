// Placing memory's instants (a peak) in the program's steps, for `memory`'s
// findings ("the caching allocator peaked at 31.2 GiB in step 3's backward"):
// the steps `analyze` finds (steps.h), per process, with their bounds on the
// host's clock, where allocations happen; and the phase of a training step an
// allocation was made in, when its call stack or the NVTX ranges open then
// say so. Private to memory/ (memory_report.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracesmith/analysis/steps.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

// The steps of one process of a file.
class ProcessSteps {
 public:
  // Detects the steps of process `pid` with analyze's step detection
  // (steps.h): from its step ranges (DetectStepRanges over its NVTX ranges),
  // else from the repeating kernel sequence of its busiest GPU
  // (StepsFromKernelSequence; that GPU's kernels held while it runs, 24 bytes
  // each). For kernel-sequence steps it then reads the launch calls of each
  // step's first kernel and of the last step's last kernel: a kernel runs on
  // the GPU after the host launched it, up to a step later, while the
  // allocations its step makes happen on the host. Three passes over the
  // file's kernels at most (count, keep, launch calls over the API rows).
  Status Read(format::TraceSource& source, uint32_t pid);
  Status Read(format::SbtReader& reader, uint32_t pid);  // the file's source

  const StepReport& report() const { return report_; }
  MemorySteps Summary() const;
  // Where `ts` (absolute, the trace's clock) falls: where, step, warmup (not
  // the phase or the text).
  StepPlace Place(uint64_t ts) const;
  // The host-side bounds of each step ([begin, end), absolute).
  const std::vector<std::pair<uint64_t, uint64_t>>& spans() const { return spans_; }

 private:
  StepReport report_;
  uint32_t warmup_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> spans_;
  std::string bounds_;  // MemorySteps::bounds
};

// The phase of a training step an allocation was made in, from its call
// stack, with the evidence in words; empty when the stack does not say:
// - backward: a frame of the autograd engine's worker thread
//   (torch::autograd::Engine::thread_main), or a Python frame of
//   Tensor.backward / torch.autograd.backward / torch.autograd.grad;
// - optimizer: a Python frame in torch/optim/ (or a native torch::optim:: one);
// - in the stacks the Kineto importer makes from torch's ranges, torch's op
//   names: "autograd::engine::evaluate_function: ..." (backward),
//   "Optimizer.step#..." (optimizer);
// - forward: a Python frame of a function named `forward`, or of
//   torch.nn.Module's call (module.py's _call_impl / _wrapped_call_impl).
// The autograd thread decides first; else the outermost Python frame that
// matches (the phase of the training loop, so that a forward recomputed
// inside backward is backward), else the outermost native one.
std::pair<std::string, std::string> PhaseOfStack(const model::Trace& meta, uint32_t stack_id);

// The phase an NVTX range's name names (case-insensitively: "backward",
// "optimizer"/"optim", "forward"; torch's "autograd::engine::evaluate_function:
// AddmmBackward0" and "Optimizer.step#AdamW.step"); empty when none, or when
// it names both forward and backward.
std::string PhaseOfRangeName(std::string_view name);

// StepPlace::text from its other fields.
std::string StepPlaceText(const StepPlace& place);

}  // namespace tracesmith::analysis
