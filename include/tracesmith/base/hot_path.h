// TS_HOT marks the functions every captured launch runs (the CUPTI
// callback, the stack walk, the ring pushes). GCC and Clang place them
// together in .text.hot: inside a real program the driver's own code runs
// between two launches and evicts ours, and code spread over a few pages of
// a large library costs an instruction-TLB and cache miss per page on every
// launch. Built with -DTS_NO_HOT_SECTION for comparison runs
// (docs/benchmarks.md).
#pragma once

#if defined(TS_NO_HOT_SECTION) || !(defined(__GNUC__) || defined(__clang__))
#define TS_HOT
#else
#define TS_HOT [[gnu::hot]]
#endif
