// The records a compact trace keeps per event: GpuOp (a kernel, memcpy or memset) and
// HostCall (a CUDA API call), 32 bytes each as structs; the codecs that store them packed
// (OpCodec, CallCodec: the fields of packed_records.h, the lane kept by the lane store);
// and ClockMap, how one process's times are put on the common clock.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace tracesmith::analysis {

enum class OpKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };
const char* OpKindName(OpKind kind);

// A kernel, memcpy or memset. 32 bytes: 10M of them are 320 MB as structs.
struct GpuOp {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t name_id = 0;         // kernel: demangled name (mangled if none); else 0
  uint32_t correlation_id = 0;  // joins the API call that issued it (same pid)
  uint32_t lane_kind = 0;       // lane index << 2 | OpKind
  uint32_t extra = 0;           // kernel: index into graph_kernels() (0: no graph);
                                // memcpy/memset: index into copies()

  uint32_t lane() const { return lane_kind >> 2; }
  OpKind kind() const { return static_cast<OpKind>(lane_kind & 3); }
  uint64_t duration() const { return end_ns - start_ns; }
};
static_assert(sizeof(GpuOp) == 32, "GpuOp must stay compact: see the memory budget above");

// A CUDA API call on a host thread. 32 bytes.
struct HostCall {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  uint32_t stack_id = 0;
  uint32_t name_id = 0;
  uint32_t lane = 0;  // host lane (pid, tid)
  uint64_t duration() const { return end_ns - start_ns; }
};
static_assert(sizeof(HostCall) == 32, "HostCall must stay compact");

// Capture clock -> CLOCK_REALTIME for one process: linear through its first
// and last anchors (corrects drift between them), an offset with one anchor.
// Monotonic; 0 ("unknown" in the model) stays 0.
struct ClockMap {
  int64_t g0 = 0, r0 = 0, g1 = 0, r1 = 0;
  bool linear = false;
  uint64_t operator()(uint64_t t) const;
};

// Converts [*s, *e] with `m` (nothing when null); the end never before the start.
inline void ConvertInterval(const ClockMap* m, uint64_t* s, uint64_t* e) {
  if (!m) return;
  *s = (*m)(*s);
  *e = std::max(*s, (*m)(*e));
}

// The order of a lane's records: by start, then end (WindowedSort keeps arrival order among
// equals).
struct ByStartEnd {
  template <typename R>
  bool operator()(const R& a, const R& b) const {
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns < b.end_ns);
  }
};

// How a record is stored (record_store.h): its fields as PackedRecords keeps them, its lane
// apart; Less: a lane's order.
struct OpCodec {
  using Record = GpuOp;
  using Less = ByStartEnd;
  static constexpr size_t kFields = 6;
  static std::array<uint64_t, kFields> Encode(const GpuOp& o) {
    return {o.start_ns,       o.end_ns - o.start_ns, o.name_id,
            o.correlation_id, o.lane_kind & 3u,      o.extra};
  }
  static GpuOp Decode(const std::array<uint64_t, kFields>& f, uint32_t lane) {
    GpuOp o;
    o.start_ns = f[0];
    o.end_ns = f[0] + f[1];
    o.name_id = uint32_t(f[2]);
    o.correlation_id = uint32_t(f[3]);
    o.lane_kind = lane << 2 | uint32_t(f[4]);
    o.extra = uint32_t(f[5]);
    return o;
  }
  static uint32_t LaneOf(const GpuOp& o) { return o.lane(); }
  static void SetLane(GpuOp* o, uint32_t lane) { o->lane_kind = lane << 2 | (o->lane_kind & 3); }
  static void Convert(const ClockMap* m, GpuOp* o) { ConvertInterval(m, &o->start_ns, &o->end_ns); }
};

struct CallCodec {
  using Record = HostCall;
  using Less = ByStartEnd;
  static constexpr size_t kFields = 5;
  static std::array<uint64_t, kFields> Encode(const HostCall& c) {
    return {c.start_ns, c.end_ns - c.start_ns, c.correlation_id, c.stack_id, c.name_id};
  }
  static HostCall Decode(const std::array<uint64_t, kFields>& f, uint32_t lane) {
    HostCall c;
    c.start_ns = f[0];
    c.end_ns = f[0] + f[1];
    c.correlation_id = uint32_t(f[2]);
    c.stack_id = uint32_t(f[3]);
    c.name_id = uint32_t(f[4]);
    c.lane = lane;
    return c;
  }
  static uint32_t LaneOf(const HostCall& c) { return c.lane; }
  static void SetLane(HostCall* c, uint32_t lane) { c->lane = lane; }
  static void Convert(const ClockMap* m, HostCall* c) {
    ConvertInterval(m, &c->start_ns, &c->end_ns);
  }
};

}  // namespace tracesmith::analysis
