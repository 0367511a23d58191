// Status and StatusOr: errors are values in the TraceSmith core.
//
// A Status carries a code and a message that says what failed, where (chunk,
// byte offset, API call) and why. Functions that can fail return Status or
// StatusOr<T>; RETURN_IF_ERROR / ASSIGN_OR_RETURN pass failures up.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace tracesmith {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,     // bad user input (flags, regexes, ranges)
  kNotFound,            // file, device or symbol absent
  kDataLoss,            // corrupt or truncated input
  kUnimplemented,       // e.g. newer SBT major version
  kFailedPrecondition,  // e.g. no GPU, CUPTI already in use
  kIoError,             // read/write/open failed
  kInternal,            // a bug in TraceSmith
  kGpuError,            // a CUDA driver or CUPTI call failed (GPU, driver or environment)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DATA_LOSS: events chunk #3 at byte 0x1a40: ..."
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgument(std::string msg);
Status NotFound(std::string msg);
Status DataLoss(std::string msg);
Status Unimplemented(std::string msg);
Status FailedPrecondition(std::string msg);
Status IoError(std::string msg);
Status Internal(std::string msg);
Status GpuError(std::string msg);

// A failed CUDA driver or CUPTI call as a kGpuError Status, one message for
// both (CU_CALL and CUPTI_CALL, tracesmith/cuda/call.h, build it):
//   "cuMemAlloc(&p, n) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at vmm.cc:12"
// api ("CUDA", "CUPTI") and code stand in for a name the library does not
// know ("CUDA error 999"); a null text reads "no description". CUDA-free, so
// that base builds without CUDA headers.
Status GpuCallError(const char* api, int code, const char* error_name, const char* error_text,
                    const char* call, const char* file, int line);

// printf-style formatting for error messages (the core has no std::format on g++12).
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace tracesmith

#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    ::tracesmith::Status ts_status_ = (expr); \
    if (!ts_status_.ok()) return ts_status_;  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TS_CONCAT(ts_statusor_, __LINE__), lhs, expr)
