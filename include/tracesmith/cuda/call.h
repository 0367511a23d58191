// CU_CALL / CUPTI_CALL: the one wrapper per vendor API, shared by capture/
// and replay/gpu/. Each evaluates the call once and turns a failure into a
// kGpuError Status (base's GpuCallError) naming the call, the error's name
// and description, and file:line:
//   "cuMemAlloc(&p, n) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at vmm.cc:12"
// Use them in functions returning Status or StatusOr<T>.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include "tracesmith/base/status.h"

namespace tracesmith::cuda {

inline Status CuCallError(CUresult rc, const char* call, const char* file, int line) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS) name = nullptr;
  if (cuGetErrorString(rc, &text) != CUDA_SUCCESS) text = nullptr;
  return GpuCallError("CUDA", static_cast<int>(rc), name, text, call, file, line);
}

inline Status CuptiCallError(CUptiResult rc, const char* call, const char* file, int line) {
  const char* name = nullptr;  // "CUPTI_ERROR_NOT_INITIALIZED"
  const char* text = nullptr;  // what it means
  if (cuptiGetResultString(rc, &name) != CUPTI_SUCCESS) name = nullptr;
  if (cuptiGetErrorMessage(rc, &text) != CUPTI_SUCCESS) text = nullptr;
  return GpuCallError("CUPTI", static_cast<int>(rc), name, text, call, file, line);
}

}  // namespace tracesmith::cuda

#define CU_CALL(call)                                                               \
  do {                                                                              \
    CUresult ts_cu_rc_ = (call);                                                    \
    if (ts_cu_rc_ != CUDA_SUCCESS)                                                  \
      return ::tracesmith::cuda::CuCallError(ts_cu_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUPTI_CALL(call)                                                                  \
  do {                                                                                    \
    CUptiResult ts_cupti_rc_ = (call);                                                    \
    if (ts_cupti_rc_ != CUPTI_SUCCESS)                                                    \
      return ::tracesmith::cuda::CuptiCallError(ts_cupti_rc_, #call, __FILE__, __LINE__); \
  } while (0)
