// CUPTI_CALL / CU_CALL: one wrapper per vendor API. Each evaluates the call
// once and turns a failure into a Status naming the call, file:line and the
// vendor's error string.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include "tracesmith/base/status.h"

namespace tracesmith::capture::internal {

inline Status CuptiError(CUptiResult rc, const char* call, const char* file, int line) {
  const char* msg = nullptr;
  if (cuptiGetResultString(rc, &msg) != CUPTI_SUCCESS || !msg) msg = "unknown CUPTI error";
  return Internal(StrFormat("%s failed at %s:%d: CUPTI error %d (%s)", call, file, line,
                            static_cast<int>(rc), msg));
}

inline Status CuError(CUresult rc, const char* call, const char* file, int line) {
  const char* msg = nullptr;
  if (cuGetErrorString(rc, &msg) != CUDA_SUCCESS || !msg) msg = "unknown CUDA error";
  return Internal(StrFormat("%s failed at %s:%d: CUDA error %d (%s)", call, file, line,
                            static_cast<int>(rc), msg));
}

}  // namespace tracesmith::capture::internal

#define CUPTI_CALL(call)                                                                           \
  do {                                                                                             \
    CUptiResult ts_cupti_rc_ = (call);                                                             \
    if (ts_cupti_rc_ != CUPTI_SUCCESS)                                                             \
      return ::tracesmith::capture::internal::CuptiError(ts_cupti_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define CU_CALL(call)                                                                        \
  do {                                                                                       \
    CUresult ts_cu_rc_ = (call);                                                             \
    if (ts_cu_rc_ != CUDA_SUCCESS)                                                           \
      return ::tracesmith::capture::internal::CuError(ts_cu_rc_, #call, __FILE__, __LINE__); \
  } while (0)
