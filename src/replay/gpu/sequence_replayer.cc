// Range replay (`tracesmith replay FILE --range A:B`): the recorded launches
// A..B and the program's stream work between them (copies, memsets, event
// record/wait, synchronizations), issued in capture order on recreated
// streams and events, from one initial state; the final memory is compared
// with the capture. docs/replay-format.md describes the rules.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "replay_common.h"
#include "tracesmith/cuda/call.h"

namespace tracesmith::replay::gpu {
namespace {

// The ops that run between launch `first` and launch `last` (ops recorded
// before launch first + 1 .. before launch last).
bool InWindow(const format::StreamOpRecord& op, uint64_t first, uint64_t last) {
  return op.kind != format::StreamOpKind::kStreamInfo && op.before_launch > first &&
         op.before_launch <= last;
}

bool WritesDevice(format::StreamOpKind k) {
  return k == format::StreamOpKind::kCopyHtoD || k == format::StreamOpKind::kCopyDtoD ||
         k == format::StreamOpKind::kMemset;
}

// The program's streams and events, recreated; destroyed at the end.
class StreamTable {
 public:
  explicit StreamTable(const format::ReplayCapture& cap) {
    for (const format::StreamOpRecord& op : cap.stream_ops)
      if (op.kind == format::StreamOpKind::kStreamInfo) info_[op.stream] = &op;
  }
  ~StreamTable() {
    for (auto& [id, e] : events_) cuEventDestroy(e);
    for (auto& [id, s] : streams_) cuStreamDestroy(s);
  }
  StreamTable(const StreamTable&) = delete;
  StreamTable& operator=(const StreamTable&) = delete;
  StreamTable(StreamTable&&) = delete;
  StreamTable& operator=(StreamTable&&) = delete;

  StatusOr<CUstream> Stream(uint32_t id) {
    if (id == format::kLegacyStream) return CU_STREAM_LEGACY;
    if (id == format::kPerThreadStream) return CU_STREAM_PER_THREAD;
    auto it = streams_.find(id);
    if (it != streams_.end()) return it->second;
    unsigned flags = CU_STREAM_DEFAULT;
    int priority = 0;
    if (auto i = info_.find(id); i != info_.end()) {
      flags = i->second->flags;
      priority = int(i->second->value);
    }
    CUstream s = nullptr;
    CU_CALL(cuStreamCreateWithPriority(&s, flags, priority));
    streams_[id] = s;
    return s;
  }
  StatusOr<CUevent> Event(uint32_t id) {
    auto it = events_.find(id);
    if (it != events_.end()) return it->second;
    CUevent e = nullptr;
    CU_CALL(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    events_[id] = e;
    return e;
  }
  size_t streams_used() const { return streams_used_.size(); }
  void Use(uint32_t id) { streams_used_.insert(id); }

 private:
  std::map<uint32_t, const format::StreamOpRecord*> info_;
  std::map<uint32_t, CUstream> streams_;
  std::map<uint32_t, CUevent> events_;
  std::set<uint32_t> streams_used_;
};

// Re-issues one recorded op.
Status IssueOp(const format::ReplayCapture& cap, const format::StreamOpRecord& op,
               const Relocation& relocation, StreamTable& table, std::vector<uint8_t>& scratch) {
  ASSIGN_OR_RETURN(CUstream stream, table.Stream(op.stream));
  const CUdeviceptr dst = CUdeviceptr(relocation.Translate(op.dst));
  const CUdeviceptr src = CUdeviceptr(relocation.Translate(op.src));
  switch (op.kind) {
    case format::StreamOpKind::kCopyHtoD: {
      ASSIGN_OR_RETURN(auto data, cap.BlobData(op.data_hash, "host-to-device copy data"));
      if (relocation.empty()) {
        CU_CALL(cuMemcpyHtoDAsync(dst, data.data(), data.size(), stream));
      } else {
        scratch.assign(data.begin(), data.end());
        relocation.PatchWords(scratch, op.dst);
        CU_CALL(cuMemcpyHtoDAsync(dst, scratch.data(), scratch.size(), stream));
        CU_CALL(cuStreamSynchronize(stream));  // `scratch` is reused
      }
      break;
    }
    case format::StreamOpKind::kCopyDtoD:
      CU_CALL(cuMemcpyDtoDAsync(dst, src, op.bytes, stream));
      break;
    case format::StreamOpKind::kCopyDtoH:
      scratch.resize(op.bytes);
      CU_CALL(cuMemcpyDtoHAsync(scratch.data(), src, op.bytes, stream));
      CU_CALL(cuStreamSynchronize(stream));
      break;
    case format::StreamOpKind::kMemset:
      if (op.element_size == 1)
        CU_CALL(cuMemsetD8Async(dst, uint8_t(op.value), op.bytes, stream));
      else if (op.element_size == 2)
        CU_CALL(cuMemsetD16Async(dst, uint16_t(op.value), op.bytes / 2, stream));
      else
        CU_CALL(cuMemsetD32Async(dst, uint32_t(op.value), op.bytes / 4, stream));
      break;
    case format::StreamOpKind::kEventRecord: {
      ASSIGN_OR_RETURN(CUevent e, table.Event(op.event));
      CU_CALL(cuEventRecord(e, stream));
      break;
    }
    case format::StreamOpKind::kStreamWaitEvent: {
      ASSIGN_OR_RETURN(CUevent e, table.Event(op.event));
      CU_CALL(cuStreamWaitEvent(stream, e, 0));
      break;
    }
    case format::StreamOpKind::kStreamSync:
      CU_CALL(cuStreamSynchronize(stream));
      break;
    case format::StreamOpKind::kEventSync: {
      ASSIGN_OR_RETURN(CUevent e, table.Event(op.event));
      CU_CALL(cuEventSynchronize(e));
      break;
    }
    case format::StreamOpKind::kContextSync:
      CU_CALL(cuCtxSynchronize());
      break;
    case format::StreamOpKind::kStreamInfo:
      break;
  }
  if (op.kind != format::StreamOpKind::kEventSync && op.kind != format::StreamOpKind::kContextSync)
    table.Use(op.stream);
  return OkStatus();
}

}  // namespace

std::vector<AddressRange> StreamOpRanges(const format::ReplayCapture& cap, uint64_t first,
                                         uint64_t last) {
  std::vector<AddressRange> out;
  for (const format::StreamOpRecord& op : cap.stream_ops) {
    if (!InWindow(op, first, last) || op.bytes == 0) continue;
    if (WritesDevice(op.kind)) out.push_back({op.dst, op.bytes});
    if (op.kind == format::StreamOpKind::kCopyDtoD || op.kind == format::StreamOpKind::kCopyDtoH)
      out.push_back({op.src, op.bytes});
  }
  return out;
}

// Memory state: each snapshot range starts from its first "before" image.
// Before each launch, a range whose captured "before" image differs from
// what the sequence left there is restored from that image, unless a
// replayed op wrote it (then the op's result is kept): such ranges were
// written in the program by work that was not recorded. At the end every
// range is compared with the "after" image of the last launch that touched
// it, except ranges a replayed op wrote after that launch.
Status ReplaySequence(const format::ReplayCapture& cap, uint64_t first, uint64_t last,
                      uint64_t granularity, const ReplayMemory& mem, ModuleCache& modules,
                      L2Flusher& flusher, const GpuReplayOptions& o, ReplayProgress* progress,
                      LaunchOutcome* out) {
  std::vector<const format::LaunchRecord*> seq;
  for (const format::LaunchRecord& l : cap.launches)
    if (l.index >= first && l.index <= last) seq.push_back(&l);
  std::sort(seq.begin(), seq.end(), [](auto* a, auto* b) { return a->index < b->index; });
  if (seq.empty())
    return NotFound(StrFormat("the capture has no launch in %llu..%llu",
                              static_cast<unsigned long long>(first),
                              static_cast<unsigned long long>(last)));
  std::vector<const format::StreamOpRecord*> ops;
  for (const format::StreamOpRecord& op : cap.stream_ops)
    if (InWindow(op, first, last)) ops.push_back(&op);  // sorted by seq on read
  std::map<uint64_t, std::vector<const format::SnapshotRecord*>> before_of, after_of;
  std::map<uint64_t, const format::SnapshotRecord*> initial;  // by address: first "before" image
  std::map<uint64_t, uint64_t> last_launch;                   // by address: last launch touching it
  std::vector<AddressRange> ranges;
  for (const format::LaunchRecord* l : seq)
    for (const format::SnapshotRecord& s : cap.snapshots) {
      if (s.launch_index != l->index) continue;
      (s.phase == format::SnapshotPhase::kBefore ? before_of : after_of)[l->index].push_back(&s);
      if (s.phase != format::SnapshotPhase::kBefore) continue;
      ranges.push_back({s.address, s.size});
      initial.emplace(s.address, &s);
      last_launch[s.address] = l->index;
    }
  std::map<uint64_t, const format::SnapshotRecord*> final_after;  // by address, last launch wins
  for (const format::LaunchRecord* l : seq)
    for (const format::SnapshotRecord* s : after_of[l->index]) final_after[s->address] = s;
  // Snapshot ranges an op writes (by start address).
  auto ranges_written = [&](const format::StreamOpRecord& op) {
    std::vector<uint64_t> hit;
    if (!WritesDevice(op.kind)) return hit;
    for (const auto& [address, s] : initial)
      if (address < op.dst + op.bytes && op.dst < address + s->size) hit.push_back(address);
    return hit;
  };
  // Ranges left out of the final comparison: an op wrote them after the last
  // launch that touched them.
  std::set<uint64_t> overwritten_late;
  for (const format::StreamOpRecord* op : ops)
    for (uint64_t a : ranges_written(*op))
      if (op->before_launch > last_launch[a]) overwritten_late.insert(a);
  for (uint64_t a : overwritten_late) final_after.erase(a);

  out->index = seq.front()->index;
  out->iterations = o.iterations;
  out->sequence = true;
  CountRanges(ranges, granularity, mem, out);
  const Relocation& relocation = mem.relocation;
  std::vector<format::LaunchRecord> patched;
  std::vector<CUfunction> functions;
  for (const format::LaunchRecord* l : seq) {
    patched.push_back(*l);
    out->param_words_rewritten += relocation.PatchWords(patched.back().params, 0);
    ASSIGN_OR_RETURN(CUfunction f, LoadFunction(cap, *l, modules));
    functions.push_back(f);
  }
  StreamTable table(cap);
  std::vector<uint8_t> scratch;
  std::vector<std::vector<uint8_t>> first_run(final_after.size());
  std::vector<double> times_us;
  constexpr uint64_t kWrittenByOp = 0;  // content marker: a replayed op wrote it
  uint64_t copies = 0, memsets = 0, syncs = 0;
  for (const format::StreamOpRecord* op : ops) {
    copies += op->kind == format::StreamOpKind::kCopyHtoD ||
              op->kind == format::StreamOpKind::kCopyDtoD ||
              op->kind == format::StreamOpKind::kCopyDtoH;
    memsets += op->kind == format::StreamOpKind::kMemset;
  }
  syncs = ops.size() - copies - memsets;
  for (uint32_t it = 0; it < o.iterations; ++it) {
    std::map<uint64_t, uint64_t> content;  // address -> hash of the image there now
    auto restore = [&](const format::SnapshotRecord& s, bool count_words) -> Status {
      ASSIGN_OR_RETURN(Image image, ImageOf(cap, s, relocation, "before snapshot",
                                            count_words ? &out->memory_words_rewritten : nullptr));
      CU_CALL(cuMemcpyHtoD(CUdeviceptr(relocation.Translate(s.address)), image.bytes.data(),
                           image.bytes.size()));
      content[s.address] = s.hash;
      return OkStatus();
    };
    CU_CALL(cuCtxSynchronize());
    for (const auto& [address, s] : initial) RETURN_IF_ERROR(restore(*s, it == 0));
    RETURN_IF_ERROR(flusher.Enqueue(CU_STREAM_LEGACY));
    CU_CALL(cuCtxSynchronize());
    auto t0 = std::chrono::steady_clock::now();
    size_t next_op = 0;
    for (size_t k = 0; k < seq.size(); ++k) {
      for (; next_op < ops.size() && ops[next_op]->before_launch <= seq[k]->index; ++next_op) {
        RETURN_IF_ERROR(IssueOp(cap, *ops[next_op], relocation, table, scratch));
        for (uint64_t a : ranges_written(*ops[next_op])) content[a] = kWrittenByOp;
      }
      for (const format::SnapshotRecord* s : before_of[seq[k]->index]) {
        auto have = content.find(s->address);
        if (have != content.end() && (have->second == s->hash || have->second == kWrittenByOp)) {
          have->second = s->hash;
          continue;
        }
        if (it == 0) ++out->external_writes;
        CU_CALL(cuCtxSynchronize());  // the restore must follow all queued work
        RETURN_IF_ERROR(restore(*s, false));
      }
      ASSIGN_OR_RETURN(CUstream stream, table.Stream(seq[k]->stream_id));
      table.Use(seq[k]->stream_id);
      RETURN_IF_ERROR(Launch(patched[k], functions[k], stream));
      for (const format::SnapshotRecord* s : after_of[seq[k]->index]) content[s->address] = s->hash;
    }
    CU_CALL(cuCtxSynchronize());
    times_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    RunVsFirst vs_first;
    size_t k = 0;
    for (const auto& [address, s] : final_after) {
      std::vector<uint8_t> host(s->size);
      CU_CALL(cuMemcpyDtoH(host.data(), CUdeviceptr(relocation.Translate(address)), host.size()));
      if (it == 0) {
        ASSIGN_OR_RETURN(Image want, ImageOf(cap, *s, relocation, "after snapshot", nullptr));
        out->vs_capture.Merge(CompareBytes(want.bytes, host, address));
        first_run[k] = std::move(host);
      } else {
        vs_first.Add(CompareBytes(first_run[k], host, address));
      }
      ++k;
    }
    vs_first.Close(out);
    ReportRuns(o, progress, it + 1);
  }
  out->l2_flushed = flusher.active();
  out->function = StrFormat(
      "range %llu..%llu: %zu launches and %zu stream ops (%llu copies, %llu memsets, %llu event "
      "record/wait and synchronizations) in capture order on %zu stream(s)",
      static_cast<unsigned long long>(first), static_cast<unsigned long long>(last), seq.size(),
      ops.size(), static_cast<unsigned long long>(copies), static_cast<unsigned long long>(memsets),
      static_cast<unsigned long long>(syncs), table.streams_used());
  out->sequence_counts = {.last_index = last,
                          .launches = seq.size(),
                          .stream_ops = ops.size(),
                          .copies = copies,
                          .memsets = memsets,
                          .syncs = syncs,
                          .streams = table.streams_used()};
  out->ranges_not_compared = uint32_t(overwritten_late.size());
  out->time = out->event_time = SummarizeTimes(times_us);
  uint64_t recorded = 0;
  for (const format::LaunchRecord* l : seq) recorded += l->recorded_ns;
  out->recorded_ns = recorded;
  return OkStatus();
}

}  // namespace tracesmith::replay::gpu
