// `tracesmith profile --gpu-metrics=list`: prints the GPUs' PM sampling
// metrics (from the injection library, which links CUPTI) and returns the
// exit status: 0 when listed.
#pragma once

namespace tracesmith::cli {

int ListGpuMetrics();

}  // namespace tracesmith::cli
