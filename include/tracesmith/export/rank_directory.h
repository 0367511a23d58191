// A job's traces as the directory of per-rank Kineto JSON files that
// multi-rank tools read (HTA's TraceAnalysis(trace_dir=DIR) reads every
// *.json / *.json.gz of DIR and tells ranks apart by "distributedInfo":
// {"rank": N}, which must be unique and >= 0).
//
// One file per process: DIR/rank-<N>.json (.json.gz with gzip), each the
// JSON export (export.h) of that process alone, with its distributedInfo:
// the process's rank (model::KnownRank); world_size and backend when the
// trace's metadata says them (kWorldSizeKey, kBackendKey), else left out.
// A process without a known rank gets the lowest rank no process has, in
// input order, and a note says so. Two processes claiming one rank are an
// error (HTA would keep one of them silently).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tracesmith/export/export.h"
#include "tracesmith/model/launch_rank.h"

namespace tracesmith::exporter {

// MetadataEntry keys (per pid) that carry the rest of distributedInfo: the
// capture writes them (tracesmith/model/launch_rank.h).
using model::kBackendKey;
using model::kWorldSizeKey;

struct RankFile {
  std::string path;   // DIR/rank-<N>.json
  std::string input;  // the trace it came from
  uint32_t pid = 0;
  int32_t rank = 0;
  bool rank_assigned = false;  // the process had no rank: `rank` was given to it
  uint64_t events = 0, bytes = 0;
};

struct RankDirectoryResult {
  std::vector<RankFile> files;  // by rank
  std::vector<std::string> notes;
  // Each input's ReadReport (damage), in input order.
  std::vector<format::ReadReport> damage;
};

// Writes DIR/rank-<N>.json for every process of `inputs` (SBT files; a file
// holding several processes, as a merged one, gives one file each). DIR is
// created when missing (its parent must exist). Existing rank files are
// replaced only with `overwrite`; all names are checked before anything is
// written. `options` as for ExportSbtFile (gzip, refuse_damaged_input...);
// its only_pid and distributed are set per file.
StatusOr<RankDirectoryResult> ExportKinetoRankDirectory(std::span<const std::string> inputs,
                                                        const std::string& dir,
                                                        const ExportOptions& options,
                                                        bool overwrite);

}  // namespace tracesmith::exporter
