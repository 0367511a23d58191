// Memory over time per owner, for the report's memory charts: for each
// process/device/space (analysis::MemoryKey), the live bytes of each owner
// (analysis::MemoryOwners: the library that allocated, from the allocation's
// stack) as the maximum per time bin. The live-memory model is the one
// `memory` uses (analysis::LiveMemory over StreamMemoryEvents); `memory`'s
// report has the per-key series and the owners' peaks, this adds the owners'
// series on the same bins, so the page can draw who held the memory when.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracesmith/analysis/memory_model.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::report {

struct OwnerSeries {
  std::string owner;
  uint64_t peak_bytes = 0;
  std::vector<uint64_t> bins;  // max live bytes per bin, the live bytes carried in included
};

struct KeyOwnerSeries {
  analysis::MemoryKey key;
  std::vector<OwnerSeries> owners;  // largest peak first
};

// Bins tile [start_ns, start_ns + duration_ns] in `bins` equal parts (the
// memory report's start, duration and bin rule: an event at ts falls in bin
// (ts - start) * bins / (duration + 1)). `meta`: the file's metadata (stacks,
// frames, mappings), to name owners. At most `max_owners` per key (largest
// peaks), 0 for all.
StatusOr<std::vector<KeyOwnerSeries>> ComputeOwnerSeries(const std::string& path,
                                                         const model::Trace& meta,
                                                         uint64_t start_ns, uint64_t duration_ns,
                                                         size_t bins, size_t max_owners = 0);

}  // namespace tracesmith::report
