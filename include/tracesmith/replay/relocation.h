// Relocated replay: when a captured address range cannot be had in the
// replaying process (taken by the driver or a host mapping there; on the GPU
// machine a fresh process gets every captured range, see
// docs/replay-format.md), the range is mapped elsewhere and pointers into
// it are rewritten.
//
// What is rewritten: every 8-byte-aligned 64-bit word, in the parameter
// buffer and in the "before" images, whose value lies inside a moved range
// (a device pointer, in all likelihood). The captured "after" images get the
// same treatment before they are compared, so pointers the kernel wrote
// compare equal. The rule is a heuristic: integer or float data that happens
// to equal an address inside a moved range would be rewritten too (for
// random data the chance per word is ~2^-40 per MiB of moved range); pointers
// stored unaligned or as 32-bit offsets are not found. Replay reports how
// many words it rewrote so the user can judge. CPU-only (unit-tested).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tracesmith::replay {

class Relocation {
 public:
  // Range [from, from + size) of the capture now lives at `to`.
  void Add(uint64_t from, uint64_t size, uint64_t to);
  bool empty() const { return moves_.empty(); }
  size_t ranges_moved() const { return moves_.size(); }

  // The address `v` has in the replay (itself when not in a moved range).
  uint64_t Translate(uint64_t v) const;
  // Rewrites the aligned 64-bit words of `bytes` that lie in a moved range;
  // `address` is the (captured) address of bytes[0], for alignment (0 for a
  // parameter buffer, whose offsets are aligned by the ABI). Returns the
  // number of words rewritten.
  uint64_t PatchWords(std::span<uint8_t> bytes, uint64_t address) const;

 private:
  struct Move {
    uint64_t from, size, to;
  };
  std::vector<Move> moves_;  // sorted by `from`, disjoint
};

}  // namespace tracesmith::replay
