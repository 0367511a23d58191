// Merging the per-process traces of a run into one SBT file.
//
// `tracesmith profile -- torchrun ...` writes one trace per process; the
// merged file holds every process with its own rows, so everything that
// reads one trace reads the whole job. The merge streams: each input is read
// chunk by chunk (SbtReader::Stream) and each chunk's rows are written at
// once, so memory holds one chunk plus the inputs' metadata (strings, stack
// tables) and the id maps, never a whole input.
//
// What changes on the way (id_fields.h says which field is which):
//  - strings, stack nodes, frames, mappings and Kineto flow ids are numbered
//    per file: they are renumbered into the output's tables (a stack node
//    or frame that points past its input's table becomes 0, counted);
//  - pids stay, unless an earlier input already has the pid (two hosts, or
//    one host reusing a pid): then the process gets a new pid above any
//    Linux pid, and the note and a "merge.original_pid" metadata row say so;
//  - Stat and MetadataEntry rows without a pid (0) are given their input's
//    process when the input holds exactly one, so each input's capture
//    stats stay with its process;
//  - every process gets a "merge.source" metadata row naming its input.
// What does not: timestamps stay in each process's capture clock, with its
// ClockAnchor rows (analysis aligns them); ids that are unique only within a
// process (correlation ids, streams, devices, threads) stay, since every
// reader keys them by pid.
// Replay payload chunks (profile --replay-capture) are not carried: replay
// works on one process's file. A note says so.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::cluster {

// Metadata keys the merge adds (MetadataEntry rows of each process).
inline constexpr char kMergeSourceKey[] = "merge.source";             // the input file
inline constexpr char kMergeOriginalPidKey[] = "merge.original_pid";  // when renumbered
// When an input was damaged: its damage ("<path> is damaged (...):" and the
// ranges), so that the merged file says it holds only part of that input
// (`info` lists it under Damage; `info --strict` refuses it), with the Stat
// rows merge.input_unreadable_bytes and merge.input_events_lost (DATA LOSS).
inline constexpr char kMergeInputDamageKey[] = "merge.input_damage";

// Where a merge is, after each chunk of events it wrote.
struct MergeProgress {
  size_t input = 0;  // index of the input being read
  size_t inputs = 0;
  uint64_t bytes_done = 0;   // input bytes read so far (all inputs)
  uint64_t bytes_total = 0;  // sum of the inputs' sizes
  uint64_t events = 0;       // event rows written so far
};

struct MergeOptions {
  // A damaged input is an error (ReadReport::DamageStatus) and no output is
  // left behind; otherwise its readable part is merged and the damage is in
  // MergeResult (the caller warns).
  bool strict = false;
  // Replace an existing output file (the CLI's --force).
  bool overwrite = false;
  // Write `output` in place, without the checks and the atomic rename: for
  // a temporary file the caller created and owns (OpenedRun).
  bool in_place = false;
  std::function<void(const MergeProgress&)> progress;
};

// One process of an input, as merged.
struct MergedProcess {
  uint32_t pid = 0;      // in the input
  uint32_t out_pid = 0;  // in the output (differs when renumbered)
  int32_t rank = -1;     // -1: unknown (model::Process::rank, see KnownRank)
  std::string host;
  std::string name;
};

struct MergedInput {
  std::string path;
  uint64_t bytes = 0;
  std::vector<MergedProcess> processes;
  uint64_t events = 0;
  std::map<std::string, uint64_t> events_by_kind;  // by record label ("kernel", ...)
  format::ReadReport damage;
  uint64_t replay_chunks = 0;   // replay payload chunks not carried
  uint64_t flows_left_out = 0;  // flow ids too large after the earlier inputs' (see notes)
  uint64_t dangling_ids = 0;    // stack/frame references past the input's tables, zeroed
  uint64_t realtime_begin = 0;  // CLOCK_REALTIME span of its clock anchors; 0 when none
  uint64_t realtime_end = 0;
};

struct MergeResult {
  std::vector<MergedInput> inputs;
  uint64_t events = 0;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;
  // Things the user should know, one sentence each: renumbered pids, inputs
  // recorded at other times than the rest (an earlier run's file?), replay
  // payloads left out, references that pointed nowhere.
  std::vector<std::string> notes;
  // "4 traces (ranks 0-3 on host h1), 1.2 M events": what was merged.
  std::string Describe() const;
};

// Merges `inputs` (in this order) into `output`. The output is written under
// a temporary name and renamed into place only when complete (unless
// in_place), so a failed merge leaves nothing behind; it must not be one of
// the inputs, and an existing file is replaced only with `overwrite`.
StatusOr<MergeResult> MergeTraces(std::span<const std::string> inputs, const std::string& output,
                                  const MergeOptions& options = {});

}  // namespace tracesmith::cluster
