// Known call chains for the unwinder tests: noinline, non-tail-recursive.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tracesmith/model/records.h"

namespace tracesmith::stacks::testing {

// Calls `leaf` from `depth` nested frames of RecurseChain.
int RecurseChain(int depth, const std::function<int()>& leaf);
// The same from frames compiled with frame pointers (fp_chain.cc).
int RecurseChainFp(int depth, const std::function<int()>& leaf);
// Calls `leaf` from test-binary frames -> TsLibRecurse (shared library,
// `lib_depth` + 1 frames) -> test-binary frames.
int ChainThroughLibrary(int lib_depth, const std::function<int()>& leaf);

// The frames' return addresses as stored (module-relative), innermost first: what two walks of
// one stack must agree on.
inline std::vector<uint64_t> RelPcs(const std::vector<model::Frame>& frames) {
  std::vector<uint64_t> out;
  for (const model::Frame& f : frames) out.push_back(f.rel_pc);
  return out;
}

}  // namespace tracesmith::stacks::testing

extern "C" int TsLibRecurse(int depth, int (*cb)(void*), void* arg);
