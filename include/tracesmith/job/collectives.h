// Collectives: NCCL kernels recognised by name, grouped by communicator and
// matched across the ranks of a job.
//
// Recognition. NCCL names its kernels after what they do:
//   ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)  (2.19+)
//   ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)                        (older)
// so operation, reduction, datatype, algorithm and protocol come from the
// name. Newer NCCL may launch `ncclDevKernel_Generic*` kernels that run any
// operation: their operation comes from the innermost enclosing NVTX range on
// the launching thread that names one (NCCL's own `ncclAllReduce`-style
// ranges, PyTorch's `nccl:all_reduce` style), else it is unknown.
//
// Bytes, communicator, group. NCCL 2.19+ attaches a payload to the NVTX
// range of each call (capture/nvtx_payloads.h; model::NvtxPayloadEvent):
// "NCCL communicator ID=<hash>; Message size [bytes]=<n>; ...". NCCL 2.25+
// gives ncclCommInitRank's "... No. of ranks=<n>; Rank=<r>" at that range's
// pop (nvtxRangePopPayload), ncclCommDestroy's at its push. A collective's
// payload is the one stamped at the start of an enclosing NCCL range
// ("ncclAllReduce", ...) of its launch (within kPayloadSlackNs); its bytes
// are nccl-tests' size: the payload's message size, times the group size
// for all-gather (NCCL gives the per-rank send), reduce-scatter (per-rank
// receive) and all-to-all (per peer) — unknown for those without the group.
// An enclosing range's name that says `bytes=<N>` (a TraceSmith convention:
// e.g. `torch.cuda.nvtx.range(f"all_reduce bytes={n}")`) wins over the
// payload, and is the only source without one (older NCCL,
// NCCL_NVTX_DISABLE=1, a launch outside its call's range:
// ncclGroupStart/End); otherwise 0 = unknown, and no bandwidth is computed.
// Bus bandwidth uses the group's size when known, else the ranks matched.
//
// Communicators. A trace does not name NCCL communicators. The rule: in each
// rank, the streams that carry NCCL kernels, ordered by their first NCCL
// kernel, are communicators 0, 1, ...; the k-th NCCL kernel on stream i of
// every rank is operation k of communicator i. This holds for PyTorch (one
// NCCL stream per process group and device, groups created in the same order
// on every rank). It is wrong when ranks belong to different subgroups
// (tensor/data parallel groups: rank 0's second NCCL stream need not be
// rank 1's), when groups are first used in a different order on different
// ranks, or when one communicator's kernels use several streams.
//
// Host collectives. Backends that run collectives on the CPU (gloo, MPI)
// launch no NCCL kernel; when the program's NVTX ranges name the operation
// (`gloo:all_reduce`, `mpi:broadcast`, `ucc:...`; PyTorch's c10d:: names as
// emit_nvtx() shows them, in a process without NCCL kernels), each such
// range that launches no NCCL kernel is the rank's part of a collective,
// from its start (arrival) to its end, one communicator per thread after the
// NCCL streams. NCCL's own ranges never are (without their kernel, the
// kernel was lost). Matching
// checks what it can (counts, NCCL stream against host thread, and the
// operation at each position where both ranks know it) and stops at the
// first disagreement with a warning, reporting the matched prefix. What it
// cannot see: ranks that lost different collectives of one kind and ended
// with equal counts (one lost its first all-reduce, the other its last)
// pair off by one without a warning.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/timeline/compact_trace.h"

namespace tracesmith::analysis {

enum class CollectiveOp : uint8_t {
  kUnknown = 0,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,
  kSend,
  kRecv,
};
const char* CollectiveOpName(CollectiveOp op);  // "all_reduce", ...
// "all_reduce" ... -> the op; kUnknown for anything else.
CollectiveOp CollectiveOpFromName(std::string_view name);
// True for operations whose every rank needs data from every other rank
// (all-reduce, all-gather, reduce-scatter, all-to-all): no rank can finish
// one before the last rank has started it. The clock refinement
// (job_clock.h) uses only these; broadcast and reduce depend on a root the
// kernel name does not give.
bool NeedsEveryRank(CollectiveOp op);

// What a kernel name says about an NCCL kernel.
struct NcclKernelInfo {
  bool is_collective = false;  // an ncclKernel_ / ncclDevKernel_ kernel
  bool generic = false;        // ncclDevKernel_Generic*: the operation is not in the name
  CollectiveOp op = CollectiveOp::kUnknown;
  std::string reduction, datatype, algorithm, protocol;  // empty when not in the name
};
NcclKernelInfo ParseNcclKernelName(std::string_view name);

// What an NVTX range name says: the operation of NCCL's and PyTorch's
// ranges ("ncclAllReduce", "nccl:all_reduce", "nccl:_all_gather_base"), and
// the bytes of a `bytes=<N>` annotation (0: none).
CollectiveOp CollectiveOpFromRangeName(std::string_view name);
uint64_t BytesFromRangeName(std::string_view name);

// The value of `name` in an NVTX payload's text ("name=value; ..."): an
// unsigned decimal; false when absent or not a number.
bool NvtxPayloadValue(std::string_view text, std::string_view name, uint64_t* value);
// An NVTX range NCCL itself pushed for one call ("ncclAllReduce", ...; not
// PyTorch's "nccl:all_reduce"): the only ranges whose payload is a call's.
bool IsNcclCallRange(std::string_view name);

// What one of NCCL's payloads says: a call's communicator and message size
// (has_bytes), or ncclCommInitRank's communicator size and rank (has_group).
struct NcclPayload {
  uint64_t comm = 0, bytes = 0;
  uint32_t nranks = 0;
  int32_t rank = -1;
  bool has_bytes = false, has_group = false;
};
NcclPayload ParseNcclPayload(std::string_view text);
// How far from an NVTX range's start its payload's timestamp may be (the
// payload is stamped in the push's callback, the range by CUPTI in the same call).
inline constexpr uint64_t kPayloadSlackNs = 20'000;

// How a collective's operation was found. kHostRange: a collective that ran
// on the host (gloo, MPI...): an NVTX range naming the operation that
// launches no NCCL kernel; its times are the range's.
enum class OpSource : uint8_t { kKernelName = 0, kNvtxRange = 1, kUnknown = 2, kHostRange = 3 };

// One rank's part of one collective, in that process's capture clock.
struct RankCollective {
  uint64_t start_ns = 0, end_ns = 0;  // the kernel (arrival = start)
  uint64_t bytes = 0;                 // 0: unknown
  uint64_t comm_hash = 0;             // NCCL's communicator id (payload); 0: unknown
  uint32_t group_size = 0;            // ranks in that communicator; 0: unknown
  int32_t group_rank = -1;            // this rank's place in it; -1: unknown
  uint32_t comm = 0;                  // communicator index (the rule above)
  uint32_t seq = 0;                   // position on its communicator, from 0
  uint32_t kind = 0;                  // index into ProcessCollectives::kinds
  CollectiveOp op = CollectiveOp::kUnknown;
  OpSource source = OpSource::kUnknown;
};

// CommStream::device of a host communicator (its `stream` is then the thread id).
inline constexpr uint32_t kHostComm = UINT32_MAX;

// A stream that carries NCCL kernels, or a thread whose NVTX ranges are host
// collectives: one communicator.
struct CommStream {
  uint32_t device = 0, stream = 0;
  uint64_t first_ns = 0;  // its first NCCL kernel (what orders communicators)
  uint32_t ops = 0;
};

struct ProcessCollectives {
  std::vector<CommStream> comms;    // by first use
  std::vector<RankCollective> ops;  // by (comm, seq)
  std::vector<std::string> kinds;   // "AllReduce Sum f32 RING LL", distinct
  uint64_t generic_kernels = 0;     // Generic kernels seen
  uint64_t generic_resolved = 0;    // ... whose operation an NVTX range gave
  uint64_t with_bytes = 0;          // collectives whose bytes are known
  uint64_t with_payload = 0;        // ... from NCCL's NVTX payload (not a bytes= name)
};

// The NCCL collectives of process `pid` in `trace`, times as the trace holds
// them (the capture clock when the trace has one process). `op_indexes`
// (optional) receives, for each of them, its index in trace.ops().
ProcessCollectives ExtractCollectives(const CompactTrace& trace, uint32_t pid,
                                      std::vector<uint32_t>* op_indexes = nullptr);

// ---- matching across ranks ----------------------------------------------

// One matched collective: for each rank of the job, the index of its part
// in that rank's `ops` (kNone: the rank is not on this communicator).
struct CollectiveMatch {
  uint32_t comm = 0, seq = 0;
  std::vector<uint32_t> part;  // by rank index
};

// Communicators are NCCL's own ids where the collectives carry them (NCCL's
// NVTX payloads), else each rank's NCCL streams by first use (the same place
// on every rank is one communicator).
struct MatchResult {
  std::vector<CollectiveMatch> matches;  // by (comm, seq)
  std::vector<std::string> warnings;     // counts or operations that disagree
  uint32_t comms = 0;
  std::vector<uint32_t> matched_per_comm;
  std::vector<uint64_t> comm_ids;  // per communicator: NCCL's id, 0 for a stream by first use
};

// `ranks[i]`: rank i's collectives (a null entry: rank i has none to offer,
// e.g. its file could not be read). `labels[i]` names rank i in warnings.
MatchResult MatchCollectives(std::span<const std::vector<RankCollective>* const> ranks,
                             std::span<const std::string> labels);

}  // namespace tracesmith::analysis
