#include "chains.h"

namespace tracesmith::stacks::testing {
namespace {

[[gnu::noinline]] int LibCallback(void* arg) {
  int r = (*static_cast<const std::function<int()>*>(arg))();
  asm volatile("" : "+r"(r));
  return r;
}

}  // namespace

[[gnu::noinline]] int RecurseChain(int depth, const std::function<int()>& leaf) {
  if (depth <= 0) {
    int r = leaf();
    asm volatile("" : "+r"(r));
    return r;
  }
  int r = RecurseChain(depth - 1, leaf);
  asm volatile("" : "+r"(r));
  return r + 1;
}

[[gnu::noinline]] int ChainThroughLibrary(int lib_depth, const std::function<int()>& leaf) {
  int r = TsLibRecurse(lib_depth, &LibCallback, const_cast<std::function<int()>*>(&leaf));
  asm volatile("" : "+r"(r));
  return r;
}

}  // namespace tracesmith::stacks::testing
