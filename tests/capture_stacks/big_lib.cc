// A shared library with thousands of functions, so that its unwind tables
// span many pages (first_time_test.cc): the FDE of its last function lies
// pages away from anything that loading the library reads.
#include <utility>

namespace {

template <int N>
[[gnu::noinline]] int Leaf(int (*cb)(int), int x) {
  int r = cb(x + N);
  asm volatile("" : "+r"(r));
  return r + N;
}

using LeafFn = int (*)(int (*)(int), int);

template <int... I>
const LeafFn* Table(std::integer_sequence<int, I...>) {
  static const LeafFn table[] = {&Leaf<I>...};
  return table;
}

constexpr int kFunctions = 4000;

}  // namespace

extern "C" [[gnu::visibility("default")]] int TsBigLibFunctions() { return kFunctions; }

// The address of function `i` (0 <= i < TsBigLibFunctions()).
extern "C" [[gnu::visibility("default")]] void* TsBigLibFunction(int i) {
  return reinterpret_cast<void*>(Table(std::make_integer_sequence<int, kFunctions>())[i]);
}
