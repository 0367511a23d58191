// An independent, deliberately naive model of the analysis definitions:
// walks every nanosecond of a small trace's model:: rows (no CompactTrace,
// no interval algebra), so the engine's fast algorithms are checked against
// the definitions themselves. Single-process traces only (no clock alignment).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tracesmith/model/trace.h"

namespace tracesmith::analysis::testing {

struct OracleOp {
  uint64_t start, end;
  uint32_t device, stream;
  bool kernel;
  uint64_t call_start;  // UINT64_MAX when no call
};

inline std::vector<OracleOp> OracleOps(const model::Trace& t) {
  std::vector<OracleOp> out;
  auto call_start = [&](uint32_t corr) {
    for (const model::ApiEvent& a : t.Rows<model::ApiEvent>())
      if (corr && a.correlation_id == corr) return a.start_ns;
    return UINT64_MAX;
  };
  for (const auto& k : t.Rows<model::KernelEvent>())
    out.push_back(
        {k.start_ns, k.end_ns, k.device_id, k.stream_id, true, call_start(k.correlation_id)});
  for (const auto& m : t.Rows<model::MemcpyEvent>())
    out.push_back(
        {m.start_ns, m.end_ns, m.device_id, m.stream_id, false, call_start(m.correlation_id)});
  for (const auto& m : t.Rows<model::MemsetEvent>())
    out.push_back(
        {m.start_ns, m.end_ns, m.device_id, m.stream_id, false, call_start(m.correlation_id)});
  return out;
}

struct OracleDevice {
  uint64_t busy = 0, kernel = 0, copy = 0, overlap = 0, stream_sum = 0;
  uint32_t max_conc = 0;
};

// Walks t in [w0, w1) for one device.
inline OracleDevice WalkDevice(const std::vector<OracleOp>& ops, uint32_t device, uint64_t w0,
                               uint64_t w1) {
  OracleDevice d;
  std::vector<uint32_t> streams;
  for (const OracleOp& o : ops)
    if (o.device == device) streams.push_back(o.stream);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  for (uint64_t t = w0; t < w1; ++t) {
    bool k = false, c = false;
    uint32_t running = 0;
    for (uint32_t s : streams) {
      bool on = false;
      for (const OracleOp& o : ops)
        if (o.device == device && o.stream == s && o.start <= t && t < o.end) {
          on = true;
          (o.kernel ? k : c) = true;
        }
      running += on;
    }
    d.busy += running > 0;
    d.kernel += k;
    d.copy += c;
    d.overlap += k && c;
    d.stream_sum += running;
    d.max_conc = std::max(d.max_conc, running);
  }
  return d;
}

// The stream state at t, straight from the definition in state_machine.h.
// 0 idle, 1 pending, 2 running, 3 waiting, 4 finished.
inline int StateAt(const model::Trace& tr, const std::vector<OracleOp>& ops, uint32_t device,
                   uint32_t stream, uint64_t t) {
  uint64_t last_end = 0;
  bool running = false, pending = false, waiting = false;
  for (const OracleOp& o : ops) {
    if (o.device != device || o.stream != stream) continue;
    last_end = std::max(last_end, o.end);
    running |= o.start <= t && t < o.end;
    pending |= o.call_start != UINT64_MAX && o.call_start <= t && t < o.start;
  }
  for (const model::SyncEvent& s : tr.Rows<model::SyncEvent>())
    waiting |= s.sync_type == model::kSyncStreamWaitEvent && s.device_id == device &&
               s.stream_id == stream && s.start_ns <= t && t < s.end_ns;
  if (running) return 2;
  if (t >= last_end) return 4;
  if (waiting) return 3;
  if (pending) return 1;
  return 0;
}

}  // namespace tracesmith::analysis::testing
