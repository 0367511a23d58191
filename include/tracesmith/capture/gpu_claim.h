// One process at a time per GPU, across processes, for a capture feature that
// CUPTI cannot serve to two processes on one GPU at once: GPU instruction
// sampling crashed CUPTI inside the second and third of three processes that
// sampled one H200 together (torchrun, 3 ranks on GPU 0, 2026-11-30).
//
// A claim is an exclusive flock(2) on /tmp/tracesmith-<feature>-<gpu uuid>.lock
// (TRACESMITH_LOCK_DIR instead of /tmp), so the kernel releases it when the
// holder exits or dies; the holder's pid is written into the file for the
// message of the process that finds it taken. Where the file cannot be opened
// at all (a read-only directory), the claim is granted unchecked.
#pragma once

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

  bool checked() const { return fd_ >= 0; }  // false: granted without a lock file

 private:
  explicit GpuClaim(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tracesmith::capture
