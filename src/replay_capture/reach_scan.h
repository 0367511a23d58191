// ReachScanner: which device allocations a kernel can reach through pointers
// stored in memory (`--replay-memory reachable`, the default). The replay
// capture snapshots the allocations the parameters point into; their images
// are scanned for aligned 8-byte words that fall inside another allocation
// (arrays of pointers such as cuBLAS batched GEMM's Aarray/Barray/Carray,
// linked structures, tables of tensors), those allocations are snapshotted
// and scanned in turn, breadth first, up to a depth and a byte budget.
//
// No CUDA here: the caller gives the allocations it knows (the capture's
// table of live allocations) and a probe for addresses outside them
// (cuMemGetAddressRange), and copies each reached allocation to the host
// before scanning it. Only words inside the 1 TiB-aligned windows that hold a
// known or snapshotted allocation are looked at (packed integer indices and
// float data fall outside them). A probe is made only for such words the
// table does not hold (at least 4 GiB, below 2^57), once per distinct word,
// at most `max_probes` times per launch; words left unprobed are counted (up
// to 65536 distinct ones), so the replay can say what may be missing. Not
// seen at all: a pointer into an allocation the table does not hold, in a
// window that holds no known allocation (the driver places a process's
// device, managed and mapped host memory in one window, 0x7f.., on the
// machines tested).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

namespace tracesmith::replay_capture {

struct MemRange {
  uint64_t address = 0, size = 0;
  uint64_t end() const { return address + size; }
  bool Contains(uint64_t a) const { return a >= address && a - address < size; }
};

struct ReachLimits {
  uint32_t max_depth = 8;           // pointer hops from a parameter's allocation
  uint64_t max_bytes = 1ull << 30;  // reached allocations' bytes, per launch
  uint32_t max_probes = 4096;       // driver lookups per launch
};

// One allocation reached through pointers stored in a scanned range.
struct ReachedAllocation {
  MemRange range;
  uint64_t via = 0;                            // address of the scanned range holding the pointers
  uint64_t first_offset = 0, last_offset = 0;  // of those pointer words in it
  uint64_t pointers = 0;                       // how many point into `range`
  uint32_t depth = 1;                          // 1: reached from a root
};

struct ReachSummary {
  uint32_t ranges_over_budget = 0;
  uint64_t bytes_over_budget = 0;
  uint32_t ranges_past_depth = 0;  // found in a range at max_depth, not taken
  uint64_t words_unresolved = 0;   // distinct address-like words not probed (budget)
  uint32_t probes = 0;
};

class ReachScanner {
 public:
  using Probe = std::function<std::optional<MemRange>(uint64_t address)>;
  // `known`: allocations known without a driver call (any order, may
  // overlap the roots). `probe` may be empty.
  ReachScanner(std::vector<MemRange> known, Probe probe, ReachLimits limits);

  // A range already snapshotted (a parameter's allocation, a requested or a
  // live one): never reached again.
  void AddRoot(const MemRange& r);
  // Scans the host image of the snapshotted range `at` (depth 0 for roots)
  // and returns the allocations newly reached from it, in address order of
  // their first pointer, within the byte budget. Each returned allocation
  // counts as snapshotted from then on; the caller copies and scans it with
  // depth `depth + 1`.
  std::vector<ReachedAllocation> Scan(const MemRange& at, std::span<const uint8_t> image,
                                      uint32_t depth);
  const ReachSummary& summary() const { return summary_; }
  uint64_t bytes_taken() const { return bytes_taken_; }

 private:
  const MemRange* FindKnown(uint64_t address);
  bool Taken(uint64_t base) const;
  void AddWindow(const MemRange& r);
  bool InWindow(uint64_t v) const;

  std::vector<MemRange> known_;  // sorted by address
  Probe probe_;
  ReachLimits limits_;
  std::vector<MemRange> taken_;    // roots and reached, sorted by address
  std::vector<uint64_t> windows_;  // address >> 40 of every known or taken range
  std::unordered_set<uint64_t> probed_, unresolved_;
  uint64_t bytes_taken_ = 0;
  size_t last_hit_ = 0;
  ReachSummary summary_;
};

}  // namespace tracesmith::replay_capture
