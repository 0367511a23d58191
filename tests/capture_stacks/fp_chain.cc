// Call chains compiled with frame pointers (CMakeLists.txt: this file only):
// their CFI finds each frame's CFA from rbp, so the walk memo's steps here
// use and read rbp (MemoStep::kUsesRbp | kReadRbp), as in a distribution's
// libpython or glibc built with frame pointers.
#include "chains.h"

namespace tracesmith::stacks::testing {

[[gnu::noinline]] int RecurseChainFp(int depth, const std::function<int()>& leaf) {
  volatile char pad[24 + 16 * (depth & 1)];  // frames of two sizes: rbp-relative addressing
  pad[0] = char(depth);
  if (depth <= 0) {
    int r = leaf();
    asm volatile("" : "+r"(r));
    return r + pad[0];
  }
  int r = RecurseChainFp(depth - 1, leaf);
  asm volatile("" : "+r"(r));
  return r + 1 + pad[0];
}

}  // namespace tracesmith::stacks::testing
