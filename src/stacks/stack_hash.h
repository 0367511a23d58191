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

// A 128-bit hash of a key list (native pcs, or merged native + Python
// keys), as two 64-bit halves. Four independent lanes, so the multiply chain,
// not memory, bounds the loop; the halves mix the lanes differently. Stacks
// are deduplicated by this hash alone: with 128 bits, two different stacks
// of one process colliding is not a practical concern (and comparing the
// keys themselves cost a cache miss per 64 bytes inside real programs).
inline void HashKeys(const uint64_t* keys, int n, uint64_t* h1, uint64_t* h2) {
  uint64_t h[4] = {kStackHashSeed, kStackHashSeed + 1, kStackHashSeed + 2, kStackHashSeed + 3};
  int i = 0;
  for (; i + 4 <= n; i += 4)
    for (int l = 0; l < 4; ++l) h[l] = StackHashStep(h[l], keys[i + l]);
  for (; i < n; ++i) h[i & 3] = StackHashStep(h[i & 3], keys[i]);
  *h1 = StackHashFinish(StackHashStep(StackHashStep(h[0], h[1]), StackHashStep(h[2], h[3])), n);
  *h2 = StackHashStep(StackHashStep(h[3] ^ 0x5bd1e995u, h[1]), StackHashStep(h[2], h[0])) ^
        uint64_t(n);
}

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
