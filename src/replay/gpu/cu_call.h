// CU_CALL: runs a CUDA driver API call and returns a Status naming the call,
// its error name and string, and the file:line on failure.
#pragma once

#include <cuda.h>

#include "tracesmith/base/status.h"

namespace tracesmith::replay::gpu {

Status CuError(CUresult r, const char* call, const char* file, int line);

#define CU_CALL(expr)                                                                      \
  do {                                                                                     \
    CUresult ts_cu_result_ = (expr);                                                       \
    if (ts_cu_result_ != CUDA_SUCCESS)                                                     \
      return ::tracesmith::replay::gpu::CuError(ts_cu_result_, #expr, __FILE__, __LINE__); \
  } while (0)

}  // namespace tracesmith::replay::gpu
