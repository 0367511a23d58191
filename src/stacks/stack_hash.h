// The stack collector's key hash (one step per frame key) and the trimmed
// unwind it runs on.
#pragma once

#include <cstdint>

namespace tracesmith::stacks {

inline constexpr uint64_t kStackHashSeed = 0x9E3779B97F4A7C15ull;

inline uint64_t StackHashStep(uint64_t h, uint64_t key) {
  h = (h ^ key) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}

// Never 0: the dedup table uses 0 for an empty slot.
inline uint64_t StackHashFinish(uint64_t h, int n) { return (h ^ uint64_t(n)) | 1; }

// An address range [start, end) of code.
struct CodeRange {
  uint64_t start, end;
};

// UnwindNative that, after `skip`, drops innermost frames while they lie in
// `trim` (the profiler's own, CUPTI's and the driver's code above the
// application). With `from` (ra set), the walk starts there and `skip` is
// ignored.
struct CallerFrame;
int UnwindNativeTrimmed(uint64_t* pcs, int max_frames, int skip, const CodeRange* trim, int n_trim,
                        const CallerFrame* from = nullptr);

}  // namespace tracesmith::stacks
