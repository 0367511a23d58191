// TraceSource: a trace to read, wherever it lives, as the readers that
// stream see it: strings and metadata, then the event rows one batch (one
// chunk of one kind) at a time, in the order a pass gives them.
//
// Three kinds of source give the same batches to the same code:
//  - one SBT file (OpenFileSource: an SbtReader's EventCursor);
//  - a model::Trace in memory (MemorySource, cut into batches of one kind;
//    the tests use it: importers and Python still write a file);
//  - a run of several files merged on the fly with their ids renumbered
//    (cluster/run_source.h; no temporary file).
// A pass is a Cursor. A reader that needs several passes (export: metadata
// and flows first, then the events) asks for a fresh cursor each time; one
// cursor at a time. Memory per pass: the metadata plus one batch of rows,
// as SbtReader::Stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::format {

class TraceSource {
 public:
  // One pass over the events (the protocol of SbtReader::EventCursor).
  class Cursor {
   public:
    virtual ~Cursor() = default;
    // The next batch: true with its rows in batch() and their kind in *kind;
    // false at the end, batch() then holding every string and metadata row
    // (those written after the last events too: end clock anchors, stats).
    virtual StatusOr<bool> Next(model::TableKind* kind) = 0;
    // Strings and metadata seen so far plus the rows Next gave (cleared by
    // the following Next).
    virtual const model::Trace& batch() const = 0;
  };

  virtual ~TraceSource() = default;

  // Starts a pass. With `wanted`, event kinds it refuses are not decoded
  // (SbtReader::EventKindFilter); strings and metadata always are.
  virtual StatusOr<std::unique_ptr<Cursor>> Events(
      const SbtReader::EventKindFilter& wanted = {}) = 0;

  // The table chunks a pass reads, in pass order, as their files' indexes
  // list them (kind, rows, start times; kind 0: a file scanned without its
  // index). Before any pass: size hints (rows to reserve), a time watermark
  // between batches. Event chunks a filter refuses are listed all the same.
  virtual std::vector<ChunkIndexEntry> TableChunks() const = 0;
  // What errors name: the file's path; empty for a run (its errors name the
  // input they are about) and in memory.
  virtual std::string name() const = 0;
  // The bytes read (the file sizes; 0 in memory): a bound for size hints.
  virtual uint64_t bytes() const = 0;
  // The files read (empty in memory): an output must not be one of them.
  virtual std::vector<std::string> files() const = 0;
  // What reading found damaged so far (after a pass: everything). A run's
  // source reports its inputs' damage with its merge (cluster/run_source.h)
  // and gives a clean report here, as its merged file did.
  virtual ReadReport report() const = 0;

  // Every row of a pass, in pass order, into `out` (emptied first): what
  // SbtReader::ReadAll gives for a file (a file's source decodes into `out`
  // directly), for any source.
  virtual Status ReadAll(model::Trace* out);

  // A pass as callbacks (SbtReader::Stream's contract).
  Status Stream(const SbtReader::EventChunkCallback& on_events,
                const SbtReader::EndCallback& on_end = {},
                const SbtReader::EventKindFilter& wanted = {});
};

// source.ReadAll(out): the whole trace in memory, for the readers that need
// it all at once (view).
inline Status ReadTrace(TraceSource& source, model::Trace* out) { return source.ReadAll(out); }

// One SBT file (the reader is kept: a second pass skips the chunks the first
// found damaged, and the report counts each chunk once).
StatusOr<std::unique_ptr<TraceSource>> OpenFileSource(const std::string& path);
// The same over a reader the caller opened and keeps alive (`path`: what
// errors name, and files(); may be empty for a reader of memory).
std::unique_ptr<TraceSource> ReaderSource(SbtReader& reader, std::string path);
// `trace` (kept alive by the caller), in batches of at most
// `rows_per_batch` rows of one kind, kinds in model order.
std::unique_ptr<TraceSource> MemorySource(const model::Trace& trace,
                                          size_t rows_per_batch = 1u << 16);

}  // namespace tracesmith::format
