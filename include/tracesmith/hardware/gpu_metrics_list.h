// `profile --gpu-metrics=list` (pm_sampling.cc), for the injection library's
// C API (session/gpu_metrics_c_api.cc).
#pragma once

#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::hardware {

// The PM sampling metrics of each distinct chip among the devices: per chip a
// header line, then one line per base metric ("name  type  description"),
// then how to name them in a set.
StatusOr<std::vector<std::string>> ListPmSamplingMetrics();

}  // namespace tracesmith::hardware
