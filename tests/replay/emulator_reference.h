// The reference schedule emulator (emulator_reference.cc): same model and
// result as replay::EmulateSchedule, by a different evaluation.
#pragma once

#include "tracesmith/replay/emulator.h"

namespace tracesmith::replay::testing {

StatusOr<EmulationResult> EmulateScheduleWithGraph(const analysis::CompactTrace& trace,
                                                   const EmulationOptions& options);

}  // namespace tracesmith::replay::testing
