#include "kineto_collectives.h"

#include <algorithm>

#include "tracesmith/base/json_buffer.h"
#include "tracesmith/job/collectives.h"

namespace tracesmith::exporter {
namespace {

using analysis::CollectiveOp;

// torch.profiler's names of the operations ("Collective name").
const char* TorchCollectiveName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "allreduce";
    case CollectiveOp::kAllGather:
      return "allgather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kReduce:
      return "reduce";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kSend:
      return "send";
    case CollectiveOp::kRecv:
      return "recv";
    case CollectiveOp::kSendRecv:
      return "sendrecv";
    default:
      return nullptr;
  }
}

// torch's dtype names and sizes of NCCL's kernel-name datatypes.
struct Dtype {
  std::string_view nccl;
  const char* torch;
  uint32_t size;
};
constexpr Dtype kDtypes[] = {
    {"f32", "Float", 4},
    {"float", "Float", 4},
    {"f16", "Half", 2},
    {"half", "Half", 2},
    {"bf16", "BFloat16", 2},
    {"__nv_bfloat16", "BFloat16", 2},
    {"f64", "Double", 8},
    {"double", "Double", 8},
    {"i8", "Char", 1},
    {"int8_t", "Char", 1},
    {"u8", "Byte", 1},
    {"uint8_t", "Byte", 1},
    {"i32", "Int", 4},
    {"int32_t", "Int", 4},
    {"u32", "UInt32", 4},
    {"uint32_t", "UInt32", 4},
    {"i64", "Long", 8},
    {"int64_t", "Long", 8},
    {"u64", "UInt64", 8},
    {"uint64_t", "UInt64", 8},
    {"f8e4m3", "Float8_e4m3fn", 1},
    {"__nv_fp8_e4m3", "Float8_e4m3fn", 1},
    {"f8e5m2", "Float8_e5m2", 1},
    {"__nv_fp8_e5m2", "Float8_e5m2", 1},
};

const Dtype* FindDtype(std::string_view nccl) {
  for (const Dtype& d : kDtypes)
    if (d.nccl == nccl) return &d;
  return nullptr;
}

}  // namespace

void KinetoCollectiveArgs::Bind(Thread& t) {
  t.bound = true;
  t.payload.used = true;
  t.comm = t.payload.comm;
  t.bytes = t.payload.bytes;
}

void KinetoCollectiveArgs::OnPayload(const model::NvtxPayloadEvent& p, std::string_view text) {
  const analysis::NcclPayload n = analysis::ParseNcclPayload(text);
  if (n.has_group && n.comm) groups_[{p.pid, n.comm}] = {n.nranks, n.rank};
  if (!n.has_bytes) return;
  Thread& t = threads_[Key(p.pid, p.tid)];
  t.payload = {p.ts_ns, n.comm, n.bytes, false};
  // Stamped after its range started (the range came first in time order); a payload stamped
  // before its range's start (the NVTX wrapper copies it before CUPTI starts the range) is
  // bound by OnRange.
  if (!t.bound && t.range_end && p.ts_ns >= t.range_start &&
      p.ts_ns <= std::min(t.range_end, t.range_start + analysis::kPayloadSlackNs))
    Bind(t);
}

void KinetoCollectiveArgs::OnRange(const model::NvtxRangeEvent& r, std::string_view name) {
  const bool nccl = analysis::IsNcclCallRange(name);
  auto it = threads_.find(Key(r.pid, r.tid));
  if (!nccl) {
    if (it != threads_.end()) it->second.last_range_start = r.start_ns;
    return;
  }
  Thread& t = it != threads_.end() ? it->second : threads_[Key(r.pid, r.tid)];
  const uint64_t previous = t.last_range_start;
  t.last_range_start = t.range_start = r.start_ns;
  t.range_end = r.end_ns;
  t.bound = false;
  if (!t.payload.used && t.payload.ts > previous &&
      t.payload.ts <= std::min(r.end_ns, r.start_ns + analysis::kPayloadSlackNs))
    Bind(t);
}

void KinetoCollectiveArgs::OnCall(const model::ApiEvent& a, std::string_view name) {
  if (a.correlation_id == 0 || threads_.empty() || name.find("Launch") == std::string_view::npos)
    return;
  auto it = threads_.find(Key(a.pid, a.tid));
  if (it == threads_.end()) return;
  const Thread& t = it->second;
  if (!t.bound || a.start_ns < t.range_start || a.start_ns > t.range_end) return;
  calls_[Key(a.pid, a.correlation_id)] = {t.comm, t.bytes};
}

std::string KinetoCollectiveArgs::KernelArgs(const model::KernelEvent& k,
                                             std::string_view kernel_name) {
  if (calls_.empty()) return {};
  auto it = calls_.find(Key(k.pid, k.correlation_id));
  if (it == calls_.end()) return {};
  const Call call = it->second;
  calls_.erase(it);
  const analysis::NcclKernelInfo info = analysis::ParseNcclKernelName(kernel_name);
  if (!info.is_collective) return {};
  JsonBuffer w(256);
  if (const char* name = TorchCollectiveName(info.op)) {
    w.Raw(", \"Collective name\": ");
    w.String(name);
  }
  uint32_t nranks = 0;
  int32_t rank = -1;
  if (auto g = groups_.find({k.pid, call.comm}); g != groups_.end())
    std::tie(nranks, rank) = g->second;
  if (const Dtype* d = FindDtype(info.datatype)) {
    w.Raw(", \"dtype\": ");
    w.String(d->torch);
    // NCCL's message size: the per-rank send of all-gather, receive of reduce-scatter.
    const uint64_t count = call.bytes / d->size;
    const bool gathers = info.op == CollectiveOp::kAllGather;
    const bool scatters = info.op == CollectiveOp::kReduceScatter;
    if (nranks || !(gathers || scatters)) {
      w.Raw(", \"In msg nelems\": ");
      w.Uint(scatters ? count * nranks : count);
      w.Raw(", \"Out msg nelems\": ");
      w.Uint(gathers ? count * nranks : count);
    }
  }
  if (nranks) {
    w.Raw(", \"Group size\": ");
    w.Uint(nranks);
    w.Raw(", \"Rank in group\": ");
    w.Int(rank);
  }
  w.Raw(", \"Message size [bytes]\": ");
  w.Uint(call.bytes);
  w.Raw(", \"NCCL communicator ID\": ");
  w.String(std::to_string(call.comm));
  return std::string(w.view());
}

}  // namespace tracesmith::exporter
