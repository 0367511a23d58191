#include "tracesmith/job/collectives.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <deque>
#include <map>
#include <unordered_map>

#include "tracesmith/base/status.h"

namespace tracesmith::analysis {
namespace {

constexpr std::array<const char*, 10> kOpNames = {
    "unknown", "all_reduce", "all_gather", "reduce_scatter", "broadcast",
    "reduce",  "all_to_all", "send_recv",  "send",           "recv",
};

// The words of an NCCL kernel name after the operation, by category. Some
// hold an underscore (COLLNET_DIRECT, int8_t): the parser tries every phrase
// at each position, longest first, instead of splitting on '_'.
enum Category : uint8_t { kAlgorithm, kProtocol, kReduction, kDatatype };
struct Phrase {
  std::string_view text;
  Category category;
};
constexpr Phrase kPhrases[] = {
    {"COLLNET_DIRECT", kAlgorithm},
    {"COLLNET_CHAIN", kAlgorithm},
    {"NVLS_TREE", kAlgorithm},
    {"__nv_bfloat16", kDatatype},
    {"__nv_fp8_e4m3", kDatatype},
    {"__nv_fp8_e5m2", kDatatype},
    {"SumPostDiv", kReduction},
    {"PreMulSum", kReduction},
    {"uint32_t", kDatatype},
    {"uint64_t", kDatatype},
    {"COLLNET", kAlgorithm},
    {"uint8_t", kDatatype},
    {"int32_t", kDatatype},
    {"int64_t", kDatatype},
    {"f8e4m3", kDatatype},
    {"f8e5m2", kDatatype},
    {"SIMPLE", kProtocol},
    {"int8_t", kDatatype},
    {"double", kDatatype},
    {"LL128", kProtocol},
    {"float", kDatatype},
    {"bf16", kDatatype},
    {"NVLS", kAlgorithm},
    {"RING", kAlgorithm},
    {"TREE", kAlgorithm},
    {"half", kDatatype},
    {"Prod", kReduction},
    {"i8", kDatatype},
    {"u8", kDatatype},
    {"i32", kDatatype},
    {"u32", kDatatype},
    {"i64", kDatatype},
    {"u64", kDatatype},
    {"f16", kDatatype},
    {"f32", kDatatype},
    {"f64", kDatatype},
    {"PAT", kAlgorithm},
    {"Sum", kReduction},
    {"Min", kReduction},
    {"Max", kReduction},
    {"Avg", kReduction},
    {"LL", kProtocol},
};

CollectiveOp OpFromKernelWord(std::string_view w) {
  if (w == "AllReduce") return CollectiveOp::kAllReduce;
  if (w == "AllGather") return CollectiveOp::kAllGather;
  if (w == "ReduceScatter") return CollectiveOp::kReduceScatter;
  if (w == "Broadcast") return CollectiveOp::kBroadcast;
  if (w == "Reduce") return CollectiveOp::kReduce;
  if (w == "AllToAll" || w == "AlltoAll") return CollectiveOp::kAllToAll;
  if (w == "SendRecv") return CollectiveOp::kSendRecv;
  return CollectiveOp::kUnknown;
}

std::string KindText(const NcclKernelInfo& k, CollectiveOp op, OpSource source) {
  std::string s = CollectiveOpName(op);
  if (k.generic)
    s += source == OpSource::kNvtxRange ? " (Generic kernel, NVTX)" : " (Generic kernel)";
  for (const std::string* w : {&k.reduction, &k.datatype, &k.algorithm, &k.protocol})
    if (!w->empty()) s += " " + *w;
  return s;
}

// Whether a range naming an operation comes from a backend that runs
// collectives on the host (see ExtractCollectives); `c10d`: whether
// PyTorch's c10d:: names count (a process without NCCL kernels).
bool IsHostBackendRange(std::string_view name, bool c10d) {
  std::string s;
  for (char c : name.substr(0, 8))
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.starts_with("gloo") || s.starts_with("mpi") || s.starts_with("ucc")) return true;
  return c10d && s.starts_with("c10d");
}

}  // namespace

const char* CollectiveOpName(CollectiveOp op) {
  const size_t i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "unknown";
}

CollectiveOp CollectiveOpFromName(std::string_view name) {
  for (size_t i = 1; i < kOpNames.size(); ++i)
    if (name == kOpNames[i]) return static_cast<CollectiveOp>(i);
  return CollectiveOp::kUnknown;
}

bool NeedsEveryRank(CollectiveOp op) {
  return op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
         op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllToAll;
}

NcclKernelInfo ParseNcclKernelName(std::string_view name) {
  NcclKernelInfo info;
  if (name.starts_with("void ")) name.remove_prefix(5);
  if (name.starts_with("ncclDevKernel_"))
    name.remove_prefix(14);
  else if (name.starts_with("ncclKernel_"))
    name.remove_prefix(11);
  else
    return info;
  info.is_collective = true;
  name = name.substr(0, std::min(name.find('('), name.find('<')));
  const std::string_view word = name.substr(0, name.find('_'));
  if (word.starts_with("Generic")) {
    info.generic = true;
    return info;
  }
  info.op = OpFromKernelWord(word);
  size_t pos = std::min(name.size(), word.size() + 1);
  while (pos < name.size()) {
    const std::string_view rest = name.substr(pos);
    const Phrase* hit = nullptr;
    for (const Phrase& p : kPhrases) {
      if (rest.starts_with(p.text) &&
          (rest.size() == p.text.size() || rest[p.text.size()] == '_')) {
        hit = &p;
        break;
      }
    }
    if (hit == nullptr) {  // an unknown word: skip it
      const size_t next = rest.find('_');
      if (next == std::string_view::npos) break;
      pos += next + 1;
      continue;
    }
    std::string* slot = hit->category == kAlgorithm   ? &info.algorithm
                        : hit->category == kProtocol  ? &info.protocol
                        : hit->category == kReduction ? &info.reduction
                                                      : &info.datatype;
    if (slot->empty()) *slot = std::string(hit->text);
    pos += hit->text.size() + 1;
  }
  return info;
}

CollectiveOp CollectiveOpFromRangeName(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c == ' ' || c == '(' || c == ',') break;
    if (c == '_' || c == ':') continue;
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // The backends whose ranges name operations: NCCL's and PyTorch's NCCL
  // ranges, CPU backends (gloo, MPI, UCC) and PyTorch's c10d op names
  // (`c10d::allreduce_`, as emit_nvtx() shows them).
  std::string_view w = s;
  bool known = false;
  for (std::string_view backend : {"nccl", "gloo", "mpi", "ucc", "c10d"}) {
    if (w.starts_with(backend)) {
      w.remove_prefix(backend.size());
      known = true;
      break;
    }
  }
  if (!known) return CollectiveOp::kUnknown;
  if (w.starts_with("allreduce")) return CollectiveOp::kAllReduce;
  if (w.starts_with("allgather")) return CollectiveOp::kAllGather;
  if (w.starts_with("reducescatter")) return CollectiveOp::kReduceScatter;
  if (w.starts_with("broadcast") || w.starts_with("bcast")) return CollectiveOp::kBroadcast;
  if (w.starts_with("alltoall")) return CollectiveOp::kAllToAll;
  if (w.starts_with("reduce")) return CollectiveOp::kReduce;
  if (w.starts_with("sendrecv")) return CollectiveOp::kSendRecv;
  if (w.starts_with("send")) return CollectiveOp::kSend;
  if (w.starts_with("recv")) return CollectiveOp::kRecv;
  return CollectiveOp::kUnknown;
}

uint64_t BytesFromRangeName(std::string_view name) {
  const size_t at = name.find("bytes=");
  if (at == std::string_view::npos) return 0;
  uint64_t v = 0;
  for (size_t i = at + 6; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]));
       ++i) {
    if (v > (UINT64_MAX - 9) / 10) return 0;  // not a size anyone has
    v = v * 10 + uint64_t(name[i] - '0');
  }
  return v;
}

bool NvtxPayloadValue(std::string_view text, std::string_view name, uint64_t* value) {
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find("; ", at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view field = text.substr(at, end - at);
    if (field.size() > name.size() && field.starts_with(name) && field[name.size()] == '=') {
      const std::string_view digits = field.substr(name.size() + 1);
      if (digits.empty()) return false;
      uint64_t v = 0;
      for (char c : digits) {
        if (!std::isdigit(static_cast<unsigned char>(c)) || v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + uint64_t(c - '0');
      }
      *value = v;
      return true;
    }
    at = end + 2;
  }
  return false;
}

bool IsNcclCallRange(std::string_view name) {
  return name.starts_with("nccl") && !name.starts_with("nccl:") &&
         CollectiveOpFromRangeName(name) != CollectiveOp::kUnknown;
}

NcclPayload ParseNcclPayload(std::string_view text) {
  NcclPayload p;
  uint64_t v = 0;
  if (NvtxPayloadValue(text, "NCCL communicator ID", &v)) p.comm = v;
  p.has_bytes = NvtxPayloadValue(text, "Message size [bytes]", &p.bytes);
  uint64_t n = 0, r = 0;
  if (NvtxPayloadValue(text, "No. of ranks", &n) && NvtxPayloadValue(text, "Rank", &r) && n > 0 &&
      n < (1u << 24) && r < n) {
    p.has_group = true;
    p.nranks = uint32_t(n);
    p.rank = int32_t(r);
  }
  return p;
}

ProcessCollectives ExtractCollectives(const CompactTrace& trace, uint32_t pid,
                                      std::vector<uint32_t>* op_indexes) {
  ProcessCollectives out;
  // Kernel names are parsed once per distinct name.
  std::unordered_map<uint32_t, int32_t> info_of;
  std::vector<NcclKernelInfo> infos;
  auto info_index = [&](uint32_t name_id) {
    auto [it, inserted] = info_of.try_emplace(name_id, -1);
    if (inserted) {
      NcclKernelInfo k = ParseNcclKernelName(trace.String(name_id));
      if (k.is_collective) {
        it->second = int32_t(infos.size());
        infos.push_back(std::move(k));
      }
    }
    return it->second;
  };

  // NVTX names that say an operation or bytes; none: no lookups at all.
  struct RangeInfo {
    CollectiveOp op = CollectiveOp::kUnknown;
    uint64_t bytes = 0;
    const NcclPayload* payload = nullptr;  // the call's NCCL payload
  };
  // NCCL's payloads of this process: parsed once per distinct text; the
  // communicators' group sizes and ranks (ncclCommInitRank's payloads).
  const auto& payloads = trace.nvtx_payloads();
  std::unordered_map<uint32_t, NcclPayload> payload_of;
  std::unordered_map<uint64_t, const NcclPayload*> group_of;
  for (const NvtxPayloadRecord& p : payloads) {
    if (trace.PidOfLane(p.lane) != pid) continue;
    auto [it, inserted] = payload_of.try_emplace(p.text_id);
    if (inserted) it->second = ParseNcclPayload(trace.String(p.text_id));
    if (it->second.has_group && it->second.comm) group_of[it->second.comm] = &it->second;
  }
  // A range's payload on its lane: of those stamped after the lane's previous
  // range started and before this one ends (at most kPayloadSlackNs after it
  // started), the one nearest its start (the push stamps it; a stall in the
  // push can put it well before the range's own start).
  auto payload_at = [&](uint32_t lane, uint64_t previous, uint64_t start,
                        uint64_t end) -> const NcclPayload* {
    const uint64_t to = std::min(end, start + kPayloadSlackNs);
    auto it =
        std::upper_bound(payloads.begin(), payloads.end(), std::pair{lane, previous},
                         [](const std::pair<uint32_t, uint64_t>& k, const NvtxPayloadRecord& p) {
                           return k.first < p.lane || (k.first == p.lane && k.second < p.ts_ns);
                         });
    const NcclPayload* best = nullptr;
    uint64_t best_gap = UINT64_MAX;
    for (; it != payloads.end() && it->lane == lane && it->ts_ns <= to; ++it) {
      auto found = payload_of.find(it->text_id);
      if (found == payload_of.end() || !found->second.has_bytes) continue;
      const uint64_t gap = it->ts_ns > start ? it->ts_ns - start : start - it->ts_ns;
      if (gap < best_gap) {
        best = &found->second;
        best_gap = gap;
      }
    }
    return best;
  };
  std::unordered_map<uint32_t, RangeInfo> range_info;
  for (const NvtxRecord& n : trace.nvtx()) {
    if (range_info.count(n.name_id)) continue;
    const std::string_view name = trace.String(n.name_id);
    range_info[n.name_id] = {CollectiveOpFromRangeName(name), BytesFromRangeName(name)};
  }
  bool ranges_matter = !payload_of.empty(), names_bytes = false;
  for (const auto& [id, r] : range_info) {
    ranges_matter |= r.op != CollectiveOp::kUnknown || r.bytes != 0;
    names_bytes |= r.bytes != 0;
  }
  const auto& nvtx = trace.nvtx();
  // A kernel NCCL launched inside ncclGroupEnd (the calls of a group only
  // enqueue; the end launches: torch's coalesced collectives,
  // batch_isend_irecv): its payload is that of the group's calls — the NCCL
  // call ranges on the lane since the matching ncclGroupStart (nested groups
  // counted) — of the kernel's operation (a send/recv kernel: the sends), bytes
  // summed, when they name one communicator; null otherwise.
  std::deque<NcclPayload> group_payloads;  // stable addresses for RangeInfo
  std::unordered_map<size_t, const NcclPayload*> group_payload_of;  // by (range, op)
  auto grouped = [&](std::vector<NvtxRecord>::const_iterator end_range,
                     CollectiveOp op) -> const NcclPayload* {
    const size_t key = size_t(end_range - nvtx.begin()) * 16 + size_t(op);
    if (auto g = group_payload_of.find(key); g != group_payload_of.end()) return g->second;
    std::vector<std::pair<CollectiveOp, const NcclPayload*>> calls;  // the group's, last first
    int depth = 1;
    auto it = end_range;
    for (int steps = 0; it != nvtx.begin() && steps < 256 && depth > 0; ++steps) {
      --it;
      if (it->lane != end_range->lane) break;
      if (it->end_ns > end_range->start_ns) continue;  // encloses the group
      const std::string_view name = trace.String(it->name_id);
      if (name == "ncclGroupEnd") ++depth;
      if (name == "ncclGroupStart") --depth;
      if (!IsNcclCallRange(name)) continue;
      calls.emplace_back(
          range_info[it->name_id].op,
          payload_at(
              it->lane,
              it != nvtx.begin() && std::prev(it)->lane == it->lane ? std::prev(it)->start_ns : 0,
              it->start_ns, it->end_ns));
    }
    auto of_op = [&](CollectiveOp want) {
      return std::count_if(calls.begin(), calls.end(),
                           [&](const auto& c) { return c.first == want; });
    };
    // The calls the kernel ran: of its operation; a send/recv kernel's sends (its
    // receives when it only receives); a generic kernel's, when they are of one.
    CollectiveOp want = op;
    if (op == CollectiveOp::kSendRecv)
      want = of_op(CollectiveOp::kSend) ? CollectiveOp::kSend : CollectiveOp::kRecv;
    if (op == CollectiveOp::kUnknown && !calls.empty() &&
        of_op(calls.front().first) == std::ptrdiff_t(calls.size()))
      want = calls.front().first;
    NcclPayload sum;
    bool any = false, whole = depth == 0 && want != CollectiveOp::kUnknown;
    for (const auto& [call_op, p] : calls) {
      if (call_op != want) continue;
      if (!p || (any && p->comm != sum.comm))
        whole = false;  // a size unknown, or two communicators
      if (!p) continue;
      if (!any)
        sum = *p;
      else
        sum.bytes += p->bytes;
      any = true;
    }
    const NcclPayload* out = nullptr;
    if (any && whole) {
      group_payloads.push_back(sum);
      out = &group_payloads.back();
    }
    group_payload_of[key] = out;
    return out;
  };
  // The enclosing ranges of the call that launched op `i`, innermost first
  // (ranges are sorted by (lane, start): walk back from the call's start).
  // 256 ranges back at most: a collective's range is near its launch.
  auto enclosing = [&](uint32_t lane, uint64_t t, CollectiveOp kernel_op, RangeInfo* found) {
    auto it =
        std::upper_bound(nvtx.begin(), nvtx.end(), std::pair{lane, t},
                         [](const std::pair<uint32_t, uint64_t>& k, const NvtxRecord& n) {
                           return k.first < n.lane || (k.first == n.lane && k.second < n.start_ns);
                         });
    for (int steps = 0; it != nvtx.begin() && steps < 256; ++steps) {
      --it;
      if (it->lane != lane) break;
      if (it->end_ns < t) continue;  // ended before: not enclosing
      const RangeInfo& r = range_info[it->name_id];
      if (found->op == CollectiveOp::kUnknown) found->op = r.op;
      if (found->bytes == 0) found->bytes = r.bytes;
      // Only NCCL's own ranges take payloads (an enclosing user range starting at the
      // same moment is not the call).
      if (!found->payload && !payload_of.empty() && r.op != CollectiveOp::kUnknown &&
          IsNcclCallRange(trace.String(it->name_id)))
        found->payload = payload_at(
            lane, it != nvtx.begin() && std::prev(it)->lane == lane ? std::prev(it)->start_ns : 0,
            it->start_ns, it->end_ns);
      if (!found->payload && !payload_of.empty() && trace.String(it->name_id) == "ncclGroupEnd")
        found->payload = grouped(it, kernel_op);
      // A payload ends the walk unless some range name says bytes (which would win).
      if (found->op != CollectiveOp::kUnknown &&
          (found->bytes != 0 || (found->payload && !names_bytes)))
        return;
    }
  };
  auto from_ranges = [&](uint32_t i, CollectiveOp kernel_op, RangeInfo* found) {
    const uint32_t c = trace.CallOfOp(i);
    if (c == kNone) return;
    enclosing(trace.calls()[c].lane, trace.calls()[c].start_ns, kernel_op, found);
  };

  struct LaneCollectives {  // one lane's collective kernels
    uint32_t lane = 0;
    uint64_t first_ns = UINT64_MAX;
    std::vector<std::pair<uint32_t, int32_t>> ops;  // (op index, info index)
  };
  std::vector<LaneCollectives> lanes;
  const auto ops = trace.ops();
  for (uint32_t l : trace.gpu_lanes()) {
    if (trace.PidOfLane(l) != pid) continue;
    LaneCollectives lane{.lane = l};
    const LaneRange r = trace.lane_range(l);
    for (uint32_t i = r.begin; i < r.end; ++i) {
      if (ops[i].kind() != OpKind::kKernel) continue;
      const int32_t k = info_index(ops[i].name_id);
      if (k < 0) continue;
      lane.first_ns = std::min(lane.first_ns, ops[i].start_ns);
      lane.ops.push_back({i, k});
    }
    if (!lane.ops.empty()) lanes.push_back(std::move(lane));
  }
  std::stable_sort(
      lanes.begin(), lanes.end(),
      [](const LaneCollectives& a, const LaneCollectives& b) { return a.first_ns < b.first_ns; });

  std::map<std::string, uint32_t> kind_ids;
  for (uint32_t comm = 0; comm < lanes.size(); ++comm) {
    const LaneCollectives& lane = lanes[comm];
    const analysis::Lane& info = trace.lanes()[lane.lane];
    out.comms.push_back({info.device, info.stream, lane.first_ns, uint32_t(lane.ops.size())});
    for (uint32_t seq = 0; seq < lane.ops.size(); ++seq) {
      const auto [i, k] = lane.ops[seq];
      const NcclKernelInfo& kernel = infos[size_t(k)];
      RangeInfo ranges;
      if (ranges_matter) from_ranges(i, kernel.op, &ranges);
      RankCollective rc;
      rc.start_ns = ops[i].start_ns;
      rc.end_ns = ops[i].end_ns;
      rc.comm = comm;
      rc.seq = seq;
      rc.bytes = ranges.bytes;
      if (kernel.op != CollectiveOp::kUnknown) {
        rc.op = kernel.op;
        rc.source = OpSource::kKernelName;
      } else if (ranges.op != CollectiveOp::kUnknown) {
        rc.op = ranges.op;
        rc.source = OpSource::kNvtxRange;
      }
      if (const NcclPayload* p = ranges.payload) {
        rc.comm_hash = p->comm;
        if (auto g = group_of.find(p->comm); g != group_of.end()) {
          rc.group_size = g->second->nranks;
          rc.group_rank = g->second->rank;
        }
        // nccl-tests' size: all-gather's output, reduce-scatter's input, all-to-all's
        // whole buffer (NCCL's payload has the per-rank or per-peer part). A `bytes=`
        // range name, the program's own word, wins.
        const bool per_rank = rc.op == CollectiveOp::kAllGather ||
                              rc.op == CollectiveOp::kReduceScatter ||
                              rc.op == CollectiveOp::kAllToAll;
        if (rc.bytes == 0 && (!per_rank || rc.group_size)) {
          rc.bytes = p->bytes * (per_rank ? rc.group_size : 1);
          out.with_payload++;
        }
      }
      if (kernel.generic) {
        out.generic_kernels++;
        out.generic_resolved += rc.source == OpSource::kNvtxRange;
      }
      out.with_bytes += rc.bytes != 0;
      const std::string text = KindText(kernel, rc.op, rc.source);
      auto [it, inserted] = kind_ids.try_emplace(text, uint32_t(out.kinds.size()));
      if (inserted) out.kinds.push_back(text);
      rc.kind = it->second;
      out.ops.push_back(rc);
      if (op_indexes) op_indexes->push_back(i);
    }
  }
  if (!ranges_matter) return out;

  // Collectives that run on the host: an NVTX range of a CPU backend (gloo,
  // MPI, UCC; PyTorch's c10d:: names only in a process without NCCL kernels)
  // that launches no NCCL kernel is the rank's part of a collective, from the
  // range's start (its arrival) to its end. NCCL's own ranges never are: one
  // without its kernel means the kernel was lost, not that it ran on the host.
  // One communicator per thread that has such ranges, after the NCCL
  // streams, ordered by first use as they are. A range inside another
  // candidate on its thread is the same call seen twice (c10d::allreduce_
  // around gloo:all_reduce) and is skipped.
  std::unordered_map<uint32_t, bool> host_name;  // range name id -> a host collective's
  for (const auto& [id, r] : range_info)
    if (r.op != CollectiveOp::kUnknown)
      host_name[id] = IsHostBackendRange(trace.String(id), /*c10d=*/lanes.empty());
  std::vector<std::pair<uint32_t, uint64_t>> nccl_launches;  // (host lane, call start)
  for (const LaneCollectives& lane : lanes)
    for (const auto& [i, k] : lane.ops)
      if (const uint32_t c = trace.CallOfOp(i); c != kNone)
        nccl_launches.push_back({trace.calls()[c].lane, trace.calls()[c].start_ns});
  std::sort(nccl_launches.begin(), nccl_launches.end());
  struct HostLane {
    uint32_t lane = 0;
    std::vector<uint32_t> ranges;  // indexes into nvtx
  };
  std::vector<HostLane> host_lanes;
  uint64_t kept_end = 0;
  uint32_t kept_lane = kNone;
  for (uint32_t n = 0; n < nvtx.size(); ++n) {
    const NvtxRecord& r = nvtx[n];
    if (auto h = host_name.find(r.name_id); h == host_name.end() || !h->second) continue;
    if (trace.PidOfLane(r.lane) != pid) continue;
    if (r.lane == kept_lane && r.start_ns < kept_end) continue;  // nested in the last one kept
    auto at =
        std::lower_bound(nccl_launches.begin(), nccl_launches.end(), std::pair{r.lane, r.start_ns});
    if (at != nccl_launches.end() && at->first == r.lane && at->second <= r.end_ns)
      continue;  // launches an NCCL kernel: that kernel is the collective
    if (host_lanes.empty() || host_lanes.back().lane != r.lane) host_lanes.push_back({r.lane, {}});
    host_lanes.back().ranges.push_back(n);
    kept_lane = r.lane;
    kept_end = r.end_ns;
  }
  std::stable_sort(host_lanes.begin(), host_lanes.end(), [&](const HostLane& a, const HostLane& b) {
    return nvtx[a.ranges.front()].start_ns < nvtx[b.ranges.front()].start_ns;
  });
  for (const HostLane& hl : host_lanes) {
    const uint32_t comm = uint32_t(out.comms.size());
    out.comms.push_back({kHostComm, trace.lanes()[hl.lane].tid, nvtx[hl.ranges.front()].start_ns,
                         uint32_t(hl.ranges.size())});
    for (uint32_t seq = 0; seq < hl.ranges.size(); ++seq) {
      const NvtxRecord& r = nvtx[hl.ranges[seq]];
      RangeInfo info = range_info[r.name_id];
      if (info.bytes == 0) enclosing(r.lane, r.start_ns, CollectiveOp::kUnknown, &info);
      RankCollective rc;
      rc.start_ns = r.start_ns;
      rc.end_ns = r.end_ns;
      rc.comm = comm;
      rc.seq = seq;
      rc.bytes = info.bytes;
      rc.op = range_info[r.name_id].op;
      rc.source = OpSource::kHostRange;
      out.with_bytes += rc.bytes != 0;
      const std::string text = std::string(CollectiveOpName(rc.op)) + " (host, NVTX range)";
      auto [it, inserted] = kind_ids.try_emplace(text, uint32_t(out.kinds.size()));
      if (inserted) out.kinds.push_back(text);
      rc.kind = it->second;
      out.ops.push_back(rc);
      if (op_indexes) op_indexes->push_back(kNone);
    }
  }
  return out;
}

MatchResult MatchCollectives(std::span<const std::vector<RankCollective>* const> ranks,
                             std::span<const std::string> labels) {
  MatchResult out;
  const size_t n = ranks.size();
  // A communicator is NCCL's own id (NCCL's payloads) when every NCCL stream of
  // every rank has one (a stream's ops without a payload, e.g. grouped calls,
  // take its id): exact with subgroups and whatever order the ranks made
  // their communicators in. Otherwise, for the whole job, the stream's place
  // by first use on its rank: ranks that make and first use their
  // communicators in the same order line up. Host (gloo/MPI) threads are
  // always matched by place.
  struct Stream {
    uint32_t begin, end;
    uint64_t id;  // its one NCCL id; 0: none, or two
  };
  std::vector<std::vector<Stream>> streams(n);
  size_t with_id = 0, without = 0;
  for (size_t r = 0; r < n; ++r) {
    if (ranks[r] == nullptr) continue;
    const auto& v = *ranks[r];
    for (uint32_t b = 0, e; b < v.size(); b = e) {
      uint64_t id = 0;
      bool two = false;
      for (e = b; e < v.size() && v[e].comm == v[b].comm; ++e)
        if (const uint64_t h = v[e].comm_hash) {
          two |= id && h != id;
          id = h;
        }
      streams[r].push_back({b, e, two ? 0 : id});
      if (v[b].source != OpSource::kHostRange) (two || !id ? without : with_id)++;
    }
  }
  const bool by_id = with_id && !without;
  if (with_id && without)
    out.warnings.push_back(StrFormat(
        "NCCL's communicator ids are on %zu of %zu NCCL streams (payloads lost, or a capture that "
        "started after the calls): communicators matched by the stream rule",
        with_id, with_id + without));
  std::map<std::pair<uint64_t, uint32_t>, uint32_t> comm_of;  // (id, 0) or (0, place)
  std::vector<std::vector<std::vector<uint32_t>>> parts;      // [comm][rank]: op indexes
  for (size_t r = 0; r < n; ++r) {
    if (ranks[r] == nullptr) continue;
    const auto& v = *ranks[r];
    bool merged = false;  // two streams of one id: their ops are put in time order
    for (const Stream& st : streams[r]) {
      const uint64_t id = by_id ? st.id : 0;
      const std::pair<uint64_t, uint32_t> key{id, id ? 0 : v[st.begin].comm};
      auto [it, added] = comm_of.try_emplace(key, uint32_t(parts.size()));
      if (added) {
        parts.emplace_back(n);
        out.comm_ids.push_back(id);
      }
      std::vector<uint32_t>& mine = parts[it->second][r];
      merged |= !mine.empty();
      for (uint32_t i = st.begin; i < st.end; ++i) mine.push_back(i);
    }
    if (merged)
      for (auto& comm : parts)
        std::stable_sort(comm[r].begin(), comm[r].end(),
                         [&](uint32_t a, uint32_t b) { return v[a].start_ns < v[b].start_ns; });
  }
  out.comms = uint32_t(parts.size());
  auto label = [&](size_t r) {
    return r < labels.size() ? labels[r] : "rank " + std::to_string(r);
  };
  auto name = [&](uint32_t c) {
    if (out.comm_ids[c])
      return StrFormat("communicator %u (NCCL id %llu)", c,
                       static_cast<unsigned long long>(out.comm_ids[c]));
    for (size_t r = 0; r < n; ++r)
      if (!parts[c][r].empty())
        return StrFormat("communicator %u (NCCL stream #%u by first use)", c,
                         (*ranks[r])[parts[c][r][0]].comm + 1);
    return StrFormat("communicator %u", c);
  };
  out.matched_per_comm.assign(out.comms, 0);
  for (uint32_t c = 0; c < out.comms; ++c) {
    const auto& part = parts[c];
    std::vector<size_t> members;
    for (size_t r = 0; r < n; ++r)
      if (!part[r].empty()) members.push_back(r);
    if (members.size() < 2) {
      if (members.size() == 1)
        out.warnings.push_back(StrFormat("%s is seen on %s only: not matched", name(c).c_str(),
                                         label(members[0]).c_str()));
      continue;
    }
    uint32_t count = UINT32_MAX, most = 0;
    for (size_t r : members) {
      count = std::min(count, uint32_t(part[r].size()));
      most = std::max(most, uint32_t(part[r].size()));
    }
    if (count != most) {
      std::string counts;
      for (size_t r : members) {
        if (counts.size() > 200) {
          counts += ", ...";
          break;
        }
        counts += (counts.empty() ? "" : ", ") + label(r) + ": " + std::to_string(part[r].size());
      }
      out.warnings.push_back(StrFormat(
          "%s: ranks ran different numbers of collectives (%s); matched the first %u, the rest "
          "are left unmatched (a rank's trace cut short, or a capture that started or stopped "
          "at different points)",
          name(c).c_str(), counts.c_str(), count));
    }
    if (out.comm_ids[c]) {  // fewer ranks than NCCL's group: some ranks' traces are missing
      uint32_t group = 0;
      for (size_t r : members)
        for (uint32_t i : part[r]) group = std::max(group, (*ranks[r])[i].group_size);
      if (group > members.size())
        out.warnings.push_back(StrFormat(
            "%s: NCCL's group has %u ranks, the job's traces hold %zu of them: matched among "
            "those",
            name(c).c_str(), group, members.size()));
    } else if (members.size() < n) {
      std::string who;
      for (size_t r : members) who += (who.empty() ? "" : ", ") + label(r);
      if (who.size() > 200) who = std::to_string(members.size()) + " ranks";
      out.warnings.push_back(StrFormat(
          "%s is on %s only (the other ranks have fewer NCCL streams): matched among those; "
          "with subgroups the stream-order rule can pair the wrong streams",
          name(c).c_str(), who.c_str()));
    }
    // A communicator index is an NCCL stream on one rank and a host thread
    // (gloo...) on another when their numbers of NCCL streams differ: such
    // parts never pair, however their operations agree.
    {
      bool host = false, kernel = false;
      for (size_t r : members) {
        const bool h = (*ranks[r])[part[r][0]].source == OpSource::kHostRange;
        host |= h;
        kernel |= !h;
      }
      if (host && kernel) {
        out.warnings.push_back(StrFormat(
            "%s is an NCCL stream on some ranks and a host (gloo/MPI) thread on others (they "
            "have different numbers of NCCL streams): not matched",
            name(c).c_str()));
        continue;
      }
    }
    for (uint32_t k = 0; k < count; ++k) {
      // Operations known on two ranks must agree, or the streams do not line up.
      size_t first_known = SIZE_MAX;
      bool agree = true;
      for (size_t r : members) {
        const RankCollective& rc = (*ranks[r])[part[r][k]];
        if (rc.op == CollectiveOp::kUnknown) continue;
        if (first_known == SIZE_MAX) {
          first_known = r;
        } else if ((*ranks[first_known])[part[first_known][k]].op != rc.op) {
          out.warnings.push_back(StrFormat(
              "%s, collective #%u: %s runs %s but %s runs %s; %s: matched the first %u only",
              name(c).c_str(), k + 1, label(first_known).c_str(),
              CollectiveOpName((*ranks[first_known])[part[first_known][k]].op), label(r).c_str(),
              CollectiveOpName(rc.op),
              out.comm_ids[c] ? "the ranks' sequences differ from here (a collective lost on "
                                "one rank)"
                              : "the ranks' NCCL streams do not line up from here "
                                "(communicators created or first used in a different order, "
                                "or subgroups)",
              k));
          agree = false;
          break;
        }
      }
      if (!agree) break;
      CollectiveMatch m{.comm = c, .seq = k, .part = std::vector<uint32_t>(n, kNone)};
      for (size_t r : members) m.part[r] = part[r][k];
      out.matches.push_back(std::move(m));
      out.matched_per_comm[c]++;
    }
  }
  return out;
}

}  // namespace tracesmith::analysis
