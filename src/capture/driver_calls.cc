#include "driver_calls.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "tracesmith/base/hot_path.h"
#include "tracesmith/capture/thread_rings.h"

namespace tracesmith::capture {
namespace {

struct DriverCallTag;
// 4096 calls (128 KiB) per thread: the writer empties the rings every 5 ms.
using Rings = ThreadRings<DriverCall, 4096, DriverCallTag>;

// Calls entered and not yet left on this thread (they may nest a little,
// e.g. a copy inside a launch's argument setup; deeper nesting is dropped).
constexpr int kMaxOpen = 4;
struct OpenCalls {
  DriverCall calls[kMaxOpen];
  bool record[kMaxOpen];
  int depth = 0;
};
thread_local OpenCalls t_open;
thread_local uint32_t t_tid = 0;

}  // namespace

TS_HOT void DriverCalls::OnEnter(CUpti_CallbackId cbid, const CUpti_CallbackData* info,
                                 bool record) {
  OpenCalls& o = t_open;
  int d = o.depth++;
  if (d >= kMaxOpen) return;
  o.record[d] = record;
  if (!record) return;
  if (!t_tid) t_tid = uint32_t(syscall(SYS_gettid));
  DriverCall& c = o.calls[d];
  c.correlation_id = info->correlationId;
  c.cbid = cbid;
  c.tid = t_tid;
  c.end_ns = 0;
  c.result = 0;
  cuptiGetTimestamp(&c.start_ns);
}

TS_HOT void DriverCalls::OnExit(CUpti_CallbackId, const CUpti_CallbackData* info) {
  OpenCalls& o = t_open;
  if (o.depth == 0) return;  // entered before the capture started
  int d = --o.depth;
  if (d >= kMaxOpen) return;
  DriverCall& c = o.calls[d];
  if (!o.record[d] || c.correlation_id != info->correlationId) return;
  cuptiGetTimestamp(&c.end_ns);
  if (info->functionReturnValue)
    c.result = *static_cast<const CUresult*>(info->functionReturnValue);
  Rings::Push(c);
}

void DriverCalls::Collect(std::vector<DriverCall>* out) {
  Rings::Drain([out](const DriverCall& c) { out->push_back(c); });
}

uint64_t DriverCalls::dropped() { return Rings::dropped(); }

}  // namespace tracesmith::capture
