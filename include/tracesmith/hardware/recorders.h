// The recorders of the GPU's own counters (hardware/README.md), each null when
// the options do not ask for it; session/recorders.cc lists them.
#pragma once

#include <memory>

#include "tracesmith/capture/recorder.h"

namespace tracesmith::hardware {

// --pc-sampling (and --kernel-timeout, built on its samples).
std::unique_ptr<capture::Recorder> MakePcSamplingRecorder(const capture::RecorderContext& context);
// --sass-counts.
std::unique_ptr<capture::Recorder> MakeSassCountsRecorder(const capture::RecorderContext& context);
// --gpu-metrics.
std::unique_ptr<capture::Recorder> MakeGpuMetricsRecorder(const capture::RecorderContext& context);

}  // namespace tracesmith::hardware
