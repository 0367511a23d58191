// A synthetic trace (model/synthetic.h) written straight to an SBT file in
// batches, for the benchmarks that read traces from disk: memory holds at
// most one batch of rows, so traces of tens of millions of events can be made
// on a small machine.
#pragma once

#include <string>

#include "tracesmith/base/status.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::cli {

Status WriteSyntheticTraceFile(const model::SyntheticOptions& options, const std::string& path);

}  // namespace tracesmith::cli
