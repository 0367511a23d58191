// Instruction profiles of sampled functions (the instruction samples of
// timeline/pc_samples.h), for the GPU frames of flame graphs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tracesmith::analysis {

class CompactTrace;  // timeline/compact_trace.h

// The instruction profile of each sampled function, for GPU frames under a
// kernel in flame graphs (report/flame.h): its counted samples per
// instruction, hottest first, with the instruction's source line and SASS
// text. One profile per function, whatever launched it (the samples cannot
// be told apart per launch).
struct ProfiledInstruction {
  std::string line;         // "kernels.cu:66" (file name only), or "(no line info)"
  std::string instruction;  // "+0x00b0 IMAD R5, R5, 0x19660d, RZ", "+0x00b0" without SASS,
                            // or "(N other instructions)" for the rest of a line's
  uint64_t samples = 0;
};
struct FunctionProfile {
  uint64_t samples = 0;
  std::vector<ProfiledInstruction> instructions;
};
// By pid << 32 | the name id the function's kernel ops carry. The
// `max_instructions` hottest of a function, then the rest as one entry per
// source line (an unrolled loop's line keeps all its samples).
std::unordered_map<uint64_t, FunctionProfile> InstructionProfiles(const CompactTrace& trace,
                                                                  size_t max_instructions = 16);

}  // namespace tracesmith::analysis
