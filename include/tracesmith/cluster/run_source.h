// RunSource: a run's files (the per-process traces of one job) read as one
// trace, merged on the fly: a format::TraceSource whose batches are its
// inputs' chunks, interleaved by start time (the next chunk is the one whose
// index entry starts first, of any input), with their ids translated as
// MergeTraces translates them (merge.h; the rules of id_fields.h). No
// temporary file: each chunk is decoded once, from its own file. The order
// comes from the chunk indexes alone, so every pass, whatever kinds it
// decodes, reads the chunks (and numbers strings, frames, flows) alike.
//
// MergeTraces is this source's batches written to a file, so a run read on
// the fly and the same run merged to a file give every reader the same rows,
// strings and metadata (tests/cluster/run_source_test.cc).
//
// Open surveys every input (metadata only, as MergeTraces does first): a
// non-trace, a run holding its own merge or (strict) a damaged input is an
// error there. A pass then holds the output's strings and metadata, every
// input's (each input's reader is open for the pass) and one chunk of rows.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/cluster/merge.h"
#include "tracesmith/format/trace_source.h"

namespace tracesmith::cluster {

namespace internal {
struct Survey;
struct PassStep;
class RunCursor;
}  // namespace internal

class RunSource final : public format::TraceSource {
 public:
  // MergeOptions' strict and progress apply (overwrite and in_place are
  // about a file and are ignored).
  static StatusOr<std::unique_ptr<RunSource>> Open(std::span<const std::string> inputs,
                                                   const MergeOptions& options = {});
  ~RunSource() override;

  // What the merge does. After Open, what the survey tells: the inputs, their
  // processes with the pids they get, each input's damage, and the notes that
  // need no events (renumbered pids, inputs recorded apart, replay payloads
  // left out). After a whole pass: all of it, as MergeTraces returns it
  // (events counted; flows left out and references that pointed nowhere;
  // a pid only events name), output_bytes 0. A pass of some kinds only adds
  // the notes it found; the counts stay those of the last whole pass.
  const MergeResult& result() const { return result_; }

  StatusOr<std::unique_ptr<Cursor>> Events(
      const format::SbtReader::EventKindFilter& wanted = {}) override;
  // The inputs' table chunks in the order a pass reads them.
  std::vector<format::ChunkIndexEntry> TableChunks() const override;
  // Empty: its errors name the input they are about.
  std::string name() const override { return std::string(); }
  uint64_t bytes() const override;
  std::vector<std::string> files() const override;
  // Clean: the inputs' damage is in result() (each input's MergedInput::damage
  // and the merge.input_damage metadata rows), as a merged file's reader found none.
  format::ReadReport report() const override;

 private:
  friend class internal::RunCursor;
  RunSource() = default;
  std::vector<std::string> inputs_;
  MergeOptions options_;
  std::vector<internal::Survey> surveys_;
  std::vector<internal::PassStep> steps_;  // a pass's order, from the indexes
  MergeResult base_;    // the survey's inputs and notes, before any input is merged
  MergeResult result_;  // see result()
};

}  // namespace tracesmith::cluster
