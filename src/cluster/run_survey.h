// What RunSource (and so MergeTraces) learns of a run's inputs before
// merging any: each input's processes, pids, clock-anchor span and damage,
// from its metadata alone (event chunks are checked, not decoded).
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/cluster/merge.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::cluster::internal {

// Stat and MetadataEntry rows with pid 0 are about the file (an importer's
// counts), not about a process 0.
template <typename T>
constexpr bool kFileLevel =
    std::is_same_v<T, model::Stat> || std::is_same_v<T, model::MetadataEntry>;

struct Survey {
  std::vector<MergedProcess> processes;
  std::set<uint32_t> pids;  // named by any metadata row
  uint64_t realtime_begin = 0, realtime_end = 0;
  uint64_t replay_chunks = 0;
  std::vector<std::string> sources;  // kMergeSourceKey values: it is a merge of these
  std::vector<format::ChunkIndexEntry> table_chunks;  // as the index lists them
  format::ReadReport report;                          // the damage the survey found
};

// With `strict`, a damaged input is the error.
StatusOr<Survey> SurveyInput(const std::string& path, bool strict);

// An input that is itself a merge of another input would put that input's
// processes in the output twice (a directory holding a run and its merge).
Status CheckNoMergeOfAnInput(std::span<const std::string> inputs,
                             const std::vector<Survey>& surveys);

// Notes the inputs whose anchors put them far from every other input's span.
void NoteInputsApart(MergeResult* r);

}  // namespace tracesmith::cluster::internal
