// The summary reports of `nsys stats`, reimplemented as SQL over an nsys-style
// SQLite export from their documented output (NVIDIA Nsight Systems
// "Post-Collection Analysis Guide"): cuda_gpu_kern_sum, cuda_api_sum,
// cuda_gpu_mem_time_sum, nvtx_sum. Columns as nsys prints them: Time (%)
// (share of the report's total), Total Time, Instances/Num Calls/Count, Avg,
// Med, Min, Max, StdDev (sample standard deviation), then the name; rows by
// total time, largest first. Times in ns. Written from the guide, not checked
// against a report nsys itself printed: the golden files of
// sqlite_nsys_test.cc are this code's own output.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::testing {

struct NsysSummaryRow {
  double time_percent = 0;
  int64_t total = 0, count = 0, min = 0, max = 0;
  double avg = 0, med = 0, stddev = 0;
  std::string style;  // nvtx_sum only: "PushPop" or "StartEnd"
  std::string name;
};

enum class NsysReport {
  kCudaGpuKernSum,      // name: demangledName (nsys' default, the templated name)
  kCudaGpuKernSumBase,  // cuda_gpu_kern_sum:base: shortName
  kCudaApiSum,
  kCudaGpuMemTimeSum,
  kNvtxSum,
};

const char* NsysReportName(NsysReport report);
StatusOr<std::vector<NsysSummaryRow>> RunNsysReport(sqlite3* db, NsysReport report);
// The rows as nsys prints them (thousands separators, one decimal).
std::string FormatNsysReport(NsysReport report, const std::vector<NsysSummaryRow>& rows);

}  // namespace tracesmith::testing
