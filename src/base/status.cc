#include "tracesmith/base/status.h"

#include <cstdarg>
#include <cstdio>

namespace tracesmith {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kIoError:
      return "IO_ERROR";
    case StatusCode::kInternal:
      return "INTERNAL";
    case StatusCode::kGpuError:
      return "GPU_ERROR";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status InvalidArgument(std::string msg) { return {StatusCode::kInvalidArgument, std::move(msg)}; }
Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
Status DataLoss(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }
Status Unimplemented(std::string msg) { return {StatusCode::kUnimplemented, std::move(msg)}; }
Status FailedPrecondition(std::string msg) {
  return {StatusCode::kFailedPrecondition, std::move(msg)};
}
Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
Status GpuError(std::string msg) { return {StatusCode::kGpuError, std::move(msg)}; }

Status GpuCallError(const char* api, int code, const char* error_name, const char* error_text,
                    const char* call, const char* file, int line) {
  const std::string name =
      error_name && *error_name ? std::string(error_name) : StrFormat("%s error %d", api, code);
  return GpuError(StrFormat("%s failed: %s (%s) at %s:%d", call, name.c_str(),
                            error_text && *error_text ? error_text : "no description", file, line));
}

std::string StrFormat(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

}  // namespace tracesmith
