// NvtxPayloadsRecorder: the typed data libraries attach to their NVTX ranges
// and marks (NVTX extended payloads, nvtx_payloads.h), as
// model::NvtxPayloadEvent rows — NCCL's communicator, message size and
// reduction on every collective call, its communicator's size and the
// caller's rank on ncclCommInitRank (issue #41 item 4).
//
// Threads: OnAttributes runs on the program's thread for every push, range
// start and mark with attributes (the default-domain forms too), called by
// the wrappers of NVTX's entry points (nvtx_extension.h: they see the
// caller's attributes; CUPTI's NVTX callback, OnNvtxPush, is used only where
// they are not installed): when the attributes carry an extended payload
// (payloadType NVTX_PAYLOAD_TYPE_EXT, ullValue -> nvtxPayloadData_t[reserved0])
// it copies each payload's bytes (64 at most) into the thread's ring — no
// lock, allocation or syscall; pushes without one return after two loads.
// The writer decodes them by their registered schema (the schemas arrive
// through InitializeInjectionNvtxExtension, injection.cc) at each flush.
// nvtxRangePopPayload (a payload given at the pop: NCCL's ncclCommInitRank,
// with the communicator's size and the caller's rank) reaches PopPayload
// below, which copies the payload and pops the range (without it the range
// stayed open to the end of the capture: NVTX makes the call a no-op when
// no tool fills its slot).
// Only with NVTX on (the `nvtx` group): NVTX must reach CUPTI.
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "nvtx_payloads.h"
#include "tracesmith/capture/capture_cost.h"
#include "tracesmith/capture/nvtx_extension.h"
#include "tracesmith/capture/recorder.h"
#include "tracesmith/capture/thread_rings.h"
#include "tracesmith/model/records.h"

namespace tracesmith::capture {
namespace {

inline constexpr size_t kMaxPayloadBytes = 64;
inline constexpr size_t kMaxPayloadsPerEvent = 4;

struct PayloadCopy {
  uint64_t ts = 0;
  const void* domain = nullptr;
  uint64_t schema_id = 0;
  uint32_t tid = 0;
  uint16_t size = 0;  // bytes copied
  uint16_t pad = 0;
  uint8_t bytes[kMaxPayloadBytes] = {};
};
struct PayloadRingTag {};
using PayloadRings = ThreadRings<PayloadCopy, 256, PayloadRingTag>;

thread_local uint32_t t_tid = 0;
std::atomic<uint64_t> g_unknown_schema{0};  // payloads whose schema no one registered

// Copies each payload of one NVTX call into the thread's ring.
void CopyPayloads(const void* domain, const NvtxPayloadData* data, size_t count) {
  if (!data) return;
  if (!t_tid) t_tid = uint32_t(syscall(SYS_gettid));
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  for (size_t i = 0; i < std::min(count, kMaxPayloadsPerEvent); ++i) {
    // SIZE_MAX: "the schema's static size" (not copied: the decoder keeps to what is copied).
    if (!data[i].payload || data[i].size == SIZE_MAX) continue;
    // A schema nobody registered: the entry is not what it claims (its payload
    // pointer is not read).
    if (!NvtxPayloadSchemas::Get().IsRegisteredId(data[i].schema_id)) {
      g_unknown_schema.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    PayloadCopy c;
    c.ts = ts;
    c.domain = domain;
    c.schema_id = data[i].schema_id;
    c.tid = t_tid;
    c.size = uint16_t(std::min(data[i].size, kMaxPayloadBytes));
    std::memcpy(c.bytes, data[i].payload, c.size);
    PayloadRings::Push(c);
  }
}

std::atomic<bool> g_on{false};  // the capture's activities are on

// An NVTX push, range start or mark with attributes: its extended payloads copied.
// Timed as the capture's "other" callbacks are: from a wrapper it runs outside CUPTI's callback
// (and a thread's first payload makes its ring: first-time work inside a timed call).
void OnAttributes(const void* domain, const void* attributes) {
  const auto* a = static_cast<const nvtxEventAttributes_t*>(attributes);
  if (a->payloadType != nvtx_payload::kPayloadTypeExt || !g_on.load(std::memory_order_relaxed))
    return;
  CostTimer timer(ThreadCost::Get(), CostSite::kOther);
  CopyPayloads(
      domain, reinterpret_cast<const NvtxPayloadData*>(static_cast<uintptr_t>(a->payload.ullValue)),
      a->reserved0 > 0 ? size_t(a->reserved0) : 1);
  timer.Finish();
}

// nvtxRangePopPayload (NCCL's ncclCommInitRank): the payload, then the pop it
// stands for, through this library's NVTX (whose handlers are CUPTI's, as the
// program's are: NVTX_INJECTION64_PATH names this library either way).
void PopPayload(const void* domain, const void* data, size_t count) {
  if (g_on.load(std::memory_order_relaxed))
    CopyPayloads(domain, static_cast<const NvtxPayloadData*>(data), count);
  nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(const_cast<void*>(domain)));
}

class NvtxPayloadsRecorder final : public Recorder {
 public:
  explicit NvtxPayloadsRecorder(uint32_t pid) : pid_(pid) {}
  const char* name() const override { return "nvtx payloads"; }

  void Claim(CallbackClaims& claims) override {
    claims.NvtxPushes();
    dropped_at_start_ = PayloadRings::dropped();
    unknown_at_start_ = g_unknown_schema.load(std::memory_order_relaxed);
    SetNvtxPopPayloadHook(&PopPayload);  // stays: the pop must happen after the capture too
    SetNvtxPushHook(&OnAttributes);      // (the wrapped entry points: nvtx_extension.h)
  }
  void OnActivities(bool on) override { g_on.store(on, std::memory_order_relaxed); }

  // CUPTI's NVTX callback: only for calls that did not come through a wrapper
  // (NVTX_INJECTION64_PATH named libcupti itself, a slot left unwrapped), its attributes being a
  // copy CUPTI may not have refreshed.
  void OnNvtxPush(const NvtxPushEvent& e) override {
    if (InsideWrappedNvtxCall()) return;
    OnAttributes(e.domain, e.attributes);
  }

  void Collect() override {
    PayloadRings::Drain([&](const PayloadCopy& c) { pending_.push_back(c); });
  }

  void Write(format::SbtWriter& sbt, bool /*final*/) override {
    NvtxPayloadSchemas& schemas = NvtxPayloadSchemas::Get();
    for (const PayloadCopy& c : pending_) {
      const std::string text = schemas.Describe(c.domain, c.schema_id, {c.bytes, c.size});
      if (text.empty()) {
        ++undecoded_;
        continue;
      }
      model::NvtxPayloadEvent row;
      row.ts_ns = c.ts;
      row.pid = pid_;
      row.tid = c.tid;
      row.schema_id = c.schema_id;
      row.text_id = sbt.InternString(text);
      sbt.Append(row);
      ++written_;
    }
    pending_.clear();
  }

  void WriteStats(StatSink& stats) override {
    stats.Add("capture.nvtx_payloads.rows", written_);
    stats.Add("capture.nvtx_payloads.schemas", NvtxPayloadSchemas::Get().schema_count());
    // Payloads but no schema: the NVTX extension never reached this library
    // (NVTX_INJECTION64_PATH named another, or the library registered first).
    stats.Add("capture.nvtx_payloads.undecoded", undecoded_, model::kStatWarning);
    // Extended payloads naming a schema no one registered (not read: see
    // NvtxPayloadSchemas::IsRegisteredId).
    stats.Add("capture.nvtx_payloads.unknown_schema",
              g_unknown_schema.load(std::memory_order_relaxed) - unknown_at_start_,
              model::kStatWarning);
    stats.Add("capture.nvtx_payloads.ring_overflows", PayloadRings::dropped() - dropped_at_start_,
              model::kStatDataLoss);
  }

 private:
  const uint32_t pid_;
  uint64_t dropped_at_start_ = 0, unknown_at_start_ = 0;
  std::vector<PayloadCopy> pending_;  // writer thread
  uint64_t written_ = 0, undecoded_ = 0;
};

}  // namespace

std::unique_ptr<Recorder> MakeNvtxPayloadsRecorder(const RecorderContext& context) {
  if (!context.subscribed || !(context.options->groups & kGroupNvtx)) return nullptr;
  return std::make_unique<NvtxPayloadsRecorder>(context.pid);
}

}  // namespace tracesmith::capture
