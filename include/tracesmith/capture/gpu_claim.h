// One process at a time per GPU, across processes, for a capture feature that
// CUPTI cannot serve to two processes on one GPU at once: GPU instruction
// sampling crashed CUPTI inside the second and third of three processes that
// sampled one H200 together (torchrun, 3 ranks on GPU 0, 2026-11-30).
//
// A claim is an exclusive flock(2) on /tmp/tracesmith-<feature>-<gpu uuid>.lock
// (TRACESMITH_LOCK_DIR instead of /tmp), so the kernel releases it when the
// holder exits or dies; a child forked meanwhile closes its copy (the lock
// stays the parent's). The holder's pid is written into the file for the
// message of the process that finds it taken. Where no lock file can be used
// (a missing or read-only directory, a link in its place, a file system
// without flock) the claim is granted unchecked. Processes that see different
// /tmp directories (containers, a per-job tmpfs) do not see each other's
// claims: TRACESMITH_LOCK_DIR names a shared one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tracesmith::capture {

class GpuClaim {
 public:
  // The claim of `feature` on the GPU `gpu_key` (its UUID) for this process;
  // null when another process holds it, `*why` then says which pid.
  static std::unique_ptr<GpuClaim> Take(std::string_view feature, std::string_view gpu_key,
                                        std::string* why);
  ~GpuClaim();
  GpuClaim(const GpuClaim&) = delete;
  GpuClaim& operator=(const GpuClaim&) = delete;

  bool checked() const { return slot_ >= 0; }  // false: granted without a lock file

 private:
  explicit GpuClaim(int slot, uint32_t generation = 0) : slot_(slot), generation_(generation) {}
  int slot_;             // the lock's fd in gpu_claim.cc's table, -1 unchecked
  uint32_t generation_;  // forks seen when taken (a child's inherited claims are not its own)
};

}  // namespace tracesmith::capture
