// Transparent huge pages for the CLI's own heap.
//
// Analysing a large trace allocates and frees hundreds of MB. On a virtual
// machine a first-touch page fault can cost ~8 µs (measured on a 2-core VM,
// 2026-11-28): `analyze` of 10 M kernels spent 640 k faults and 21.7 s there,
// against 50 k faults and 8.6 s with glibc's `glibc.malloc.hugetlb=1`, which
// advises the heap and large blocks as huge pages (MADV_HUGEPAGE). glibc
// reads that tunable only when a process starts, so main() re-executes the
// CLI once with it set, then restores the environment the user gave before
// anything else runs: programs the CLI starts never see it.
//
// Skipped when the kernel's THP mode is "always" (nothing to gain) or
// "never" (nothing to get), when GLIBC_TUNABLES already sets malloc.hugetlb,
// for `profile` and `record` (the user's program is its child; its own heap is small), and
// with TRACESMITH_HUGE_PAGES=0. If the re-exec fails the CLI just runs on.
// Skipped in sanitizer builds: their allocator replaces glibc's and ignores
// the tunable, and the re-exec would double the start-up of an instrumented
// binary (0.37 s of a 0.67 s `--version` under ASan+UBSan, 2-core VM).
#pragma once

#include <string>

namespace tracesmith::cli {

// True when a sanitizer's allocator replaces glibc's malloc in this build.
constexpr bool SanitizerOwnsMalloc() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// Re-executes the CLI with huge pages advised when that applies (returns only
// when it does not); after the re-exec, restores GLIBC_TUNABLES as it was.
void UseHugePages(int argc, char** argv);

// For `version -v`: whether this process's heap is advised as huge pages and
// why not when it is not.
std::string HugePagesLine();

}  // namespace tracesmith::cli
