// The kernel page (`tracesmith kernel TRACE NAME`): one sampled GPU function
// of a whole run, as Nsight Compute's source page shows one kernel profiled
// alone: every source line with samples (and its text when the file is
// readable here), and under each line its instructions with their SASS,
// samples and stall reasons; plus the function's stall reasons and the code
// that launched it (pc_samples.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/analysis/pc_samples.h"
#include "tracesmith/base/status.h"

namespace tracesmith::analysis {

struct KernelPageInstruction {
  uint32_t pc_offset = 0;
  std::string sass;  // empty: not disassembled
  uint64_t samples = 0;
  double share = 0;                // of the function's samples, %
  std::vector<StallShare> stalls;  // most samples first (share: of the instruction's)
};

struct KernelPageLine {
  std::string file;  // empty: instructions without line information
  uint32_t line = 0;
  std::string source;  // the line's text, when `file` is readable here
  uint64_t samples = 0;
  double share = 0;                                 // of the function's samples, %
  std::vector<KernelPageInstruction> instructions;  // by offset
};

struct KernelPage {
  FunctionSamples function;               // the summary (stalls, sites, GPU time)
  std::vector<KernelPageLine> lines;      // by file, then line
  std::vector<std::string> also_matched;  // other sampled functions the name matched
};

// The page of the sampled function whose kernel name (or mangled name)
// contains `name`; of several, the one with most GPU time (the others are
// listed). NotFound naming the sampled functions when none matches, or
// saying that the trace has no GPU instruction samples.
StatusOr<KernelPage> BuildKernelPage(const CompactTrace& trace, std::string_view name,
                                     const CallSiteRules& rules);

void WriteKernelPageText(const KernelPage& page, std::ostream& out);
void WriteKernelPageJson(const KernelPage& page, std::ostream& out);

}  // namespace tracesmith::analysis
