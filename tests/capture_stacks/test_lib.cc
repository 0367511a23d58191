// A shared library with a known call chain, built without frame pointers so
// that unwinding through it needs its CFI.
#include <cstdint>

extern "C" {

using TsLibCallback = int (*)(void* arg);

// Recurses `depth` times, then calls `cb`. The `+ 1` after the call keeps
// it from being a tail call, so every level leaves a frame.
[[gnu::noinline, gnu::visibility("default")]] int TsLibRecurse(int depth, TsLibCallback cb,
                                                               void* arg) {
  int r;
  if (depth <= 0) {
    r = cb(arg);  // not a tail call: the innermost level keeps its frame too
    asm volatile("" : "+r"(r));
    return r;
  }
  r = TsLibRecurse(depth - 1, cb, arg);
  asm volatile("" : "+r"(r));
  return r + 1;
}

}  // extern "C"
