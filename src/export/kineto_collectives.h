// The collective arguments torch.profiler writes on an NCCL kernel
// ("Collective name", "dtype", "In msg nelems", "Out msg nelems", "Group
// size"), from NCCL's NVTX payloads (model::NvtxPayloadEvent), for the
// Kineto JSON export. Streaming, in the export's time order: a payload and
// NCCL's range ("ncclAllReduce", ...) of a thread are seen before the launch
// call inside that range, which is seen before its kernel. A range's payload
// is the thread's latest one stamped after its previous range started and at
// most kPayloadSlackNs after this one did (job/collectives.h's rule); a
// launch outside its call's range (ncclGroupStart/End) gets none. Memory: one
// entry per thread, per communicator and per launch in an NCCL call waiting
// for its kernel (dropped when the kernel comes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "tracesmith/model/records.h"

namespace tracesmith::exporter {

class KinetoCollectiveArgs {
 public:
  void OnPayload(const model::NvtxPayloadEvent& p, std::string_view text);
  void OnRange(const model::NvtxRangeEvent& r, std::string_view name);
  // Launch calls only (`name`: cudaLaunchKernel, cuLaunchKernelEx, ...).
  void OnCall(const model::ApiEvent& a, std::string_view name);
  // JSON members (", \"Collective name\": ...") for kernel `k` named
  // `kernel_name`, or "" when it is not an NCCL kernel with a payload.
  std::string KernelArgs(const model::KernelEvent& k, std::string_view kernel_name);

 private:
  struct Payload {
    uint64_t ts = 0, comm = 0, bytes = 0;
    bool used = true;  // bound to a range (or none yet)
  };
  struct Thread {
    uint64_t last_range_start = 0;            // its last range of any name
    uint64_t range_start = 0, range_end = 0;  // its last NCCL range
    bool bound = false;                       // ... has its payload
    Payload payload;                          // its last call payload; the bound one
    uint64_t comm = 0, bytes = 0;
  };
  struct Call {
    uint64_t comm = 0, bytes = 0;
  };
  static uint64_t Key(uint32_t a, uint32_t b) { return uint64_t(a) << 32 | b; }
  static void Bind(Thread& t);
  std::unordered_map<uint64_t, Thread> threads_;  // (pid, tid)
  std::unordered_map<uint64_t, Call> calls_;      // (pid, correlation) of launches in NCCL calls
  std::map<std::pair<uint32_t, uint64_t>, std::pair<uint32_t, int32_t>> groups_;  // (pid, comm)
};

}  // namespace tracesmith::exporter
