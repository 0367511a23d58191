// Before/after comparison of two runs' GPU instruction samples (`tracesmith
// diff`, pc_samples.h): per kernel, how its samples moved between its source
// lines and stall reasons. Shares are of the kernel's own samples on each
// side, so a kernel sampled 2x longer in B compares fairly; a line or reason
// that went from 60% to 20% of the kernel's samples says where the change
// took the time out.
//
// Kernels are matched by name (as the kernel table names them: demangled
// when captured); one kernel sampled in several processes of a run is added
// up over them. Lines are matched by (file, line) as the capture recorded
// them: a change that moves code moves its lines too.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tracesmith/timeline/pc_samples.h"

namespace tracesmith::analysis {

// One source line or stall reason of a kernel on both sides.
struct SampleShareChange {
  std::string file;  // lines: empty for instructions without line information
  uint32_t line = 0;
  std::string reason;  // stall reasons: CUPTI's name
  uint64_t samples_a = 0, samples_b = 0;
  double share_a = 0, share_b = 0;  // of the kernel's samples on that side, %
  double delta() const { return share_b - share_a; }
};

struct KernelSampleDiff {
  std::string name;
  uint64_t samples_a = 0, samples_b = 0;
  double share_a = 0, share_b = 0;  // of all samples of that side, %
  // The lines and reasons among the `top` hottest of either side, largest
  // share change first, then hottest (empty for a kernel sampled on one side
  // only).
  std::vector<SampleShareChange> lines, stalls;
};

struct PcSampleDiff {
  uint64_t samples_a = 0, samples_b = 0;  // counted samples of each side
  // Sampled on both sides, most samples (A + B shares) first; then those of
  // one side only, most samples first.
  std::vector<KernelSampleDiff> kernels, only_a, only_b;
  bool empty() const { return samples_a == 0 && samples_b == 0; }
};

// `a` and `b`: SampledFunctions of each side, with all their lines
// (max_lines SIZE_MAX): a line outside one side's hottest has its true share
// there. `top`: lines and reasons per kernel taken from each side.
PcSampleDiff DiffPcSamples(const std::vector<FunctionSamples>& a,
                           const std::vector<FunctionSamples>& b, size_t top = 5);

// The diff's section "GPU instruction samples" (nothing without samples);
// `top` kernels of each list.
void WritePcSampleDiffText(const PcSampleDiff& d, size_t top, std::ostream& out);

}  // namespace tracesmith::analysis
