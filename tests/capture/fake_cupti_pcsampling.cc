// The fake CUPTI PC sampling API and CUDA driver (fake_cupti_pcsampling.h).
// The definitions take their C linkage from the real headers' declarations.
#include "capture/fake_cupti_pcsampling.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>

namespace tracesmith::hardware::fake_cupti {
namespace {

struct Reason {
  uint32_t index;
  const char* name;
  uint32_t samples;  // per PC record
};
constexpr Reason kReasons[kNumStallReasons] = {
    {7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard", 3},
    {8, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued", 2},
    {12, "smsp__pcsamp_warps_issue_stalled_selected", 1},
    {30, "smsp__pcsamp_sample_count", 6},
};
static_assert(3 + 1 == kCountedSamplesPerPc && 3 + 2 + 1 + 6 == kTotalSamplesPerPc);

struct Context : ContextState {
  CUptiResult fail_disable = CUPTI_SUCCESS;
  CUptiResult fail_enable = CUPTI_SUCCESS;
  int hw_full = 0;  // 1: success with the flag, 2: CUPTI_ERROR_OUT_OF_MEMORY
  // Not const: CUPTI writes into them.
  CUpti_PCSamplingData* buffer = nullptr;
  uint32_t* indices = nullptr;
  size_t num_indices = 0;
};

struct Fake {
  std::mutex mu;
  std::map<CUcontext, Context> contexts;
  uint64_t now_ns = 1'000'000'000;
  CUcontext current = nullptr;
};

Fake& F() {
  static Fake* fake = new Fake;  // never destroyed: a recorder's statics may call in late
  return *fake;
}

// Records into `d` (CUPTI's output fields it has news for; the rest left as they are).
void Fill(CUpti_PCSamplingData& d, uint32_t first_pc, size_t pcs) {
  pcs = std::min(pcs, d.collectNumPcs);
  for (size_t i = 0; i < pcs; ++i) {
    CUpti_PCSamplingPCData& pc = d.pPcData[i];
    pc.pcOffset = first_pc + 0x10 * i;
    pc.functionName = const_cast<char*>(kFunction);
    pc.functionIndex = 0;
    pc.cubinCrc = kCubinCrc;
    pc.correlationId = 0;
    pc.stallReasonCount = kNumStallReasons;
    for (int j = 0; j < kNumStallReasons; ++j) {
      pc.stallReason[j].pcSamplingStallReasonIndex = kReasons[j].index;
      pc.stallReason[j].samples = kReasons[j].samples;
    }
  }
  d.totalNumPcs = pcs;
  d.remainingNumPcs = 0;
  d.totalSamples = pcs * kTotalSamplesPerPc;
  d.droppedSamples = 0;
  d.nonUsrKernelsTotalSamples = 0;
}

// What CUPTI may do with a context's configuration at any Enable or Disable:
// write into the sampling data buffer (and its first record), read the stall
// indices.
void TouchConfiguration(Context& c) {
  if (!c.buffer) return;
  c.buffer->totalNumPcs = 0;
  c.buffer->remainingNumPcs = 0;
  if (c.buffer->collectNumPcs) c.buffer->pPcData[0].stallReasonCount = 0;
  volatile uint32_t first_index = c.num_indices ? c.indices[0] : 0;
  (void)first_index;
}

}  // namespace

ContextState State(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(F().mu);
  return F().contexts[ctx];
}

void FailNextDisable(CUcontext ctx, CUptiResult error) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().contexts[ctx].fail_disable = error;
}

void FailNextEnable(CUcontext ctx, CUptiResult error) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().contexts[ctx].fail_enable = error;
}

void HardwareBufferFullAtNextGetData(CUcontext ctx, bool as_error) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().contexts[ctx].hw_full = as_error ? 2 : 1;
}

void DestroyContext(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().contexts.erase(ctx);
  if (F().current == ctx) F().current = nullptr;
}

void AdvanceClock(uint64_t ns) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().now_ns += ns;
}

void SetCurrentContext(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(F().mu);
  F().current = ctx;
}

}  // namespace tracesmith::hardware::fake_cupti

using tracesmith::hardware::fake_cupti::Context;
using tracesmith::hardware::fake_cupti::F;
using tracesmith::hardware::fake_cupti::Fill;
using tracesmith::hardware::fake_cupti::kCubinCrc;
using tracesmith::hardware::fake_cupti::kNumStallReasons;
using tracesmith::hardware::fake_cupti::kPcsPerGetData;
using tracesmith::hardware::fake_cupti::kReasons;
using tracesmith::hardware::fake_cupti::TouchConfiguration;

// ---- CUPTI: PC sampling

CUptiResult CUPTIAPI cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams* p) {
  if (!p || !p->ctx) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  Context& c = F().contexts[p->ctx];
  if (c.enabled) return CUPTI_ERROR_INVALID_OPERATION;  // as strict as CUPTI may be: once on
  if (c.fail_enable != CUPTI_SUCCESS) return std::exchange(c.fail_enable, CUPTI_SUCCESS);
  if (c.buffer) ++c.writes_into_old_buffer;
  TouchConfiguration(c);
  c.enabled = true;
  ++c.enables;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams* p) {
  if (!p || !p->ctx) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  Context& c = F().contexts[p->ctx];
  if (!c.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  if (c.fail_disable != CUPTI_SUCCESS) {
    const CUptiResult r = c.fail_disable;
    c.fail_disable = CUPTI_SUCCESS;
    return r;
  }
  TouchConfiguration(c);
  // What CUPTI still held, flushed into the configuration's buffer.
  if (c.buffer) Fill(*c.buffer, 0x100, 1);
  c.enabled = false;
  ++c.disables;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams* p) {
  if (!p || !p->numStallReasons) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  if (!F().contexts[p->ctx].enabled) return CUPTI_ERROR_INVALID_OPERATION;
  *p->numStallReasons = kNumStallReasons;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  if (!p || !p->stallReasonIndex || !p->stallReasons) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  if (!F().contexts[p->ctx].enabled) return CUPTI_ERROR_INVALID_OPERATION;
  for (size_t i = 0; i < p->numStallReasons && i < std::size(kReasons); ++i) {
    p->stallReasonIndex[i] = kReasons[i].index;
    std::strncpy(p->stallReasons[i], kReasons[i].name, CUPTI_STALL_REASON_STRING_SIZE - 1);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams* p) {
  if (!p || !p->pPCSamplingConfigurationInfo) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  Context& c = F().contexts[p->ctx];
  if (!c.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  for (size_t i = 0; i < p->numAttributes; ++i) {
    auto& a = p->pPCSamplingConfigurationInfo[i];
    if (a.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER) {
      auto* d = static_cast<CUpti_PCSamplingData*>(
          a.attributeData.samplingDataBufferData.samplingDataBuffer);
      if (!d || !d->collectNumPcs || !d->pPcData) return CUPTI_ERROR_INVALID_PARAMETER;
      c.buffer = d;
    } else if (a.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON) {
      c.indices = a.attributeData.stallReasonData.pStallReasonIndex;
      c.num_indices = a.attributeData.stallReasonData.stallReasonCount;
    }
  }
  c.config = c.buffer;
  c.stall_indices = c.indices;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams* p) {
  if (!p || !p->pcSamplingData) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(F().mu);
  Context& c = F().contexts[p->ctx];
  if (!c.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  ++c.get_data_calls;
  auto& d = *static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
  if (!d.collectNumPcs || !d.pPcData) return CUPTI_ERROR_INVALID_PARAMETER;
  const int hw_full = c.hw_full;
  c.hw_full = 0;
  if (hw_full) d.hardwareBufferFull = 1;
  if (hw_full == 2) return CUPTI_ERROR_OUT_OF_MEMORY;
  Fill(d, 0x10, kPcsPerGetData);
  return CUPTI_SUCCESS;
}

// ---- CUPTI: the rest the recorder's files call

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t* timestamp) {
  std::lock_guard<std::mutex> lock(F().mu);
  *timestamp = F().now_ns;
  F().now_ns += 1000;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext, uint32_t* device_id) {
  *device_id = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (fake)";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCubinCrc(CUpti_GetCubinCrcParams* p) {
  p->cubinCrc = kCubinCrc;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetSassToSourceCorrelation(CUpti_GetSassToSourceCorrelationParams*) {
  return CUPTI_ERROR_NOT_SUPPORTED;
}

// ---- CUDA driver: one device, whose primary context is inactive; the current
// context is SetCurrentContext's.

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = char(0xa0 + i + device);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice, unsigned int* flags, int* active) {
  *flags = 0;
  *active = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext*, CUdevice) { return CUDA_ERROR_INVALID_VALUE; }

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  std::lock_guard<std::mutex> lock(F().mu);
  *ctx = F().current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* ctx) {
  if (ctx) *ctx = nullptr;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char**, CUfunction) { return CUDA_ERROR_NOT_FOUND; }

CUresult CUDAAPI cuKernelGetName(const char**, CUkernel) { return CUDA_ERROR_NOT_FOUND; }
