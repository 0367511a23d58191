// Known call chains for the unwinder tests: noinline, non-tail-recursive.
#pragma once

#include <functional>

namespace tracesmith::stacks::testing {

// Calls `leaf` from `depth` nested frames of RecurseChain.
int RecurseChain(int depth, const std::function<int()>& leaf);
// The same from frames compiled with frame pointers (fp_chain.cc).
int RecurseChainFp(int depth, const std::function<int()>& leaf);
// Calls `leaf` from test-binary frames -> TsLibRecurse (shared library,
// `lib_depth` + 1 frames) -> test-binary frames.
int ChainThroughLibrary(int lib_depth, const std::function<int()>& leaf);

}  // namespace tracesmith::stacks::testing

extern "C" int TsLibRecurse(int depth, int (*cb)(void*), void* arg);
