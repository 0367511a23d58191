// The rank of a process of a distributed job, when the trace knows it.
//
// Captures write Process::rank from $RANK, or -1 when it is not set.
// Importers (torch.profiler JSON, XRay) leave it 0 and record no host name,
// which every capture does: their 0 means "unknown", not rank 0.
#pragma once

#include <cstdint>
#include <optional>

#include "tracesmith/model/records.h"

namespace tracesmith::model {

inline std::optional<int32_t> KnownRank(const Process& p) {
  if (p.rank > 0 || (p.rank == 0 && p.hostname_id != 0)) return p.rank;
  return std::nullopt;
}

}  // namespace tracesmith::model
