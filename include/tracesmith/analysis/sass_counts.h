// Exact instruction counts (`profile --sass-counts`, model::SassCount rows;
// docs/pc-sampling.md "Exact instruction counts"): how many times each SASS
// instruction of a function ran, summed over every launch of the function
// (CUPTI's SASS metrics give no launch), and the function's opcode histogram
// (CUTracer's `opcode_only` view, without binary instrumentation).
//
// The rows are metadata: a CompactTrace keeps them in its meta() with the
// PcLine / PcSass rows of the same instructions (source line, SASS text).
// Counts do not depend on the analysed window (they cannot be cut in time);
// GPU time and launches do.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

class CompactTrace;       // compact_trace.h
struct InstructionIndex;  // pc_samples.h

struct InstructionCount {
  uint64_t executed = 0;         // by warps (smsp__sass_inst_executed)
  uint64_t thread_executed = 0;  // by threads (smsp__sass_thread_inst_executed); 0: not counted
};
// A function's counts by instruction (cubin CRC, pc offset).
using InstructionCounts = std::map<std::pair<uint64_t, uint32_t>, InstructionCount>;

// The opcode of a SASS instruction: its first token, the predicate
// ("@P0", "@!PT") stripped: "@!P0 BRA 0x80" -> "BRA", "LDG.E.128 R4, ..."
// -> "LDG.E.128". "" for an empty text.
std::string_view OpcodeOf(std::string_view sass);

struct OpcodeCount {
  std::string opcode;  // OpcodeOf its SASS; "" for instructions without SASS text
  uint64_t executed = 0, thread_executed = 0;
  uint64_t instructions = 0;  // distinct instructions with this opcode
  double share = 0;           // of the function's executed warp instructions, %
};

// One counted function of one process.
struct FunctionCounts {
  std::string name;      // as the kernel table names it (demangled when captured)
  std::string function;  // as counted (mangled)
  uint32_t pid = 0, function_id = 0;
  uint64_t executed = 0, thread_executed = 0;
  uint64_t instructions = 0;            // distinct instructions counted
  uint64_t kernels = 0, kernel_ns = 0;  // its kernel ops in the analysed window
  std::vector<OpcodeCount> opcodes;     // most executed first
  bool threads() const { return thread_executed != 0; }
};

// The counts of function (pid, function_id) of `meta`, rows of the same
// instruction added.
InstructionCounts CountsOf(const model::Trace& meta, uint32_t pid, uint32_t function_id);

// The opcode histogram of `counts` (the instructions of function (pid,
// function_id)), the opcodes from the SASS text of `index` (IndexInstructions
// of `meta`: its PcSass rows).
std::vector<OpcodeCount> OpcodeHistogram(const model::Trace& meta, const InstructionIndex& index,
                                         uint32_t pid, uint32_t function_id,
                                         const InstructionCounts& counts);

// "1,234,567": an exact count, grouped by thousands.
std::string ExactCount(uint64_t n);

// Every counted function of `trace`, most executed warp instructions first;
// empty when the trace has no SassCount rows.
std::vector<FunctionCounts> SummarizeSassCounts(const CompactTrace& trace);

}  // namespace tracesmith::analysis
