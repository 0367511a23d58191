// What the kernel page of a function and the page of one of its launches
// share (kernel_page.cc, kernel_launch_page.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tracesmith/analysis/kernel_page.h"

namespace tracesmith::analysis {

// A function's samples by instruction (cubin CRC, pc offset), then by stall
// reason (string id; the uncounted `_not_issued` ones among them).
using InstructionSamples = std::map<std::pair<uint64_t, uint32_t>, std::map<uint32_t, uint64_t>>;

// The kernel time of the analysed window (the denominator of GPU-time shares).
uint64_t KernelTime(const CompactTrace& trace);
// The sampled functions the pages choose from; NotFound saying how to
// capture samples when the trace has none.
StatusOr<PcSampleReport> SampledReport(const CompactTrace& trace, const CallSiteRules& rules);
// "\n  name" for the sampled functions with most GPU time (at most 10).
std::string SampledKernelNames(const PcSampleReport& report);
// All the samples of function `f` (the trace's, every launch's).
InstructionSamples SamplesOf(const CompactTrace& trace, const FunctionSamples& f);
// The page's lines of function `f` from `pcs` (counted reasons only), each
// instruction and line with its share of `total`, its line's source text
// when the file is readable here; with `counts` (--sass-counts), each
// instruction's exact counts, and the counted instructions without samples too.
std::vector<KernelPageLine> PageLines(const CompactTrace& trace, const FunctionSamples& f,
                                      const InstructionSamples& pcs, uint64_t total,
                                      const InstructionCounts* counts = nullptr);

}  // namespace tracesmith::analysis
