// Training and inference steps: where each iteration begins and ends, how
// long it took and how busy the GPU was in it, so a trace can be read step by
// step (as HTA and nsys users do) and the warm-up step is not averaged in.
//
// Steps come from torch.profiler's "ProfilerStep#N" NVTX/annotation ranges
// when the trace has them; else from the program's own NVTX ranges named
// "step N", "Step#N", "iteration N", "iter_N" (a number last, nothing after);
// otherwise from the repeating kernel sequence: a
// kernel that runs once per iteration recurs every P kernels (P = kernels
// per step), and each recurrence starts a step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

struct Step {
  uint64_t begin_ns = 0, end_ns = 0;  // absolute; [begin, end)
  uint64_t gpu_busy_ns = 0;           // union of GPU ops inside, all devices
  uint32_t kernels = 0;               // kernels starting inside
  uint64_t ns() const { return end_ns - begin_ns; }
};

struct StepReport {
  // "ProfilerStep ranges", "NVTX step ranges" or "repeating kernel
  // sequence"; empty: no steps.
  std::string method;
  std::string anchor;   // the recurring kernel (kernel method)
  uint32_t period = 0;  // kernels per step (kernel method)
  std::vector<Step> steps;
  uint32_t first_number = 1;  // the number of steps[0] (--steps keeps the run's numbering)
  uint64_t median_ns = 0;
  double cv = 0;                   // stddev / mean of the steps that are not outliers
  std::vector<uint32_t> outliers;  // step indexes (0-based) outside [0.67, 1.5] x median
  // The leading steps that are the warm-up, set apart from the window (WarmupSteps,
  // LoadOptions::steady_state); 0 when the window holds them.
  uint32_t warmup = 0;
};

// At least 3 steps, or none; the steps chosen with --steps (any number) when
// the trace was cut to them (CompactTrace::chosen_steps). With the kernel method, boundaries fall
// where the recurring kernel runs (or just after the GPU's longest idle gap in the period), which
// need not be where the program's loop body begins; the kernels before the first recurrence are the
// first step when they are at least half a period (the first iteration and its one-time work).
StepReport DetectSteps(const CompactTrace& trace);

// The parts of DetectSteps for a reader that holds less than a CompactTrace of every op
// (`memory`, placing a peak in its step):
// - steps from step ranges alone (ProfilerStep#N, then the program's own), not measured
//   (Step::gpu_busy_ns and kernels 0), with the statistics; none when the ranges hold none;
StepReport DetectStepRanges(const CompactTrace& trace);
// - steps from the repeating kernel sequence of one GPU's kernels (DetectSteps passes the
//   busiest GPU's: most kernels, the lowest (pid, device) among equals), in any order: they
//   are put in start order (then end, then name) in place. Sets steps (not measured), method,
//   anchor (named by `name_of`) and period; false, with no steps, when no kernel recurs
//   regularly.
struct SequenceKernel {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t name_id = 0;
  uint32_t correlation_id = 0;  // not read here: the caller's, kept with its kernel
};
bool StepsFromKernelSequence(std::vector<SequenceKernel>* kernels, StepReport* report,
                             const std::function<std::string_view(uint32_t)>& name_of);
// - the statistics of the steps (median, outliers, spread), from their lengths.
void StepStatistics(StepReport* report);

// The warm-up of a run: how many of its first steps are outliers longer than the median (the
// first iteration's one-time work: autotuning, lazy module loading, allocator growth), when the
// first is one and at least 2 steady steps follow; else 0.
uint32_t WarmupSteps(const StepReport& steps);
// The warm-up's steps once set apart (StepReport::warmup), as the text says them: "step 1",
// "steps 1-2".
std::string WarmupStepsText(const StepReport& steps);

// What an NVTX range's name says about steps: torch.profiler's
// "ProfilerStep#N", a program's own step range ("step N", "Step#N",
// "iteration N", "iter_N", "step:N": a number last, nothing after), or not a step.
enum class StepRange { kNone, kProfilerStep, kProgram };
StepRange StepRangeKind(std::string_view name);

// "N" or "A:B" (1-based, inclusive) -> [first, last] step indexes (0-based),
// checked against `count`.
StatusOr<std::pair<size_t, size_t>> ParseStepRange(const std::string& text, size_t count);

}  // namespace tracesmith::analysis
