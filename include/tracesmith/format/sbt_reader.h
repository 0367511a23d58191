// SbtReader: reads SBT files, with random access through the footer index
// and recovery of everything readable from damaged or truncated files.
//
// A file with a valid trailer and index is read through the index. Without
// one (the writer was killed) the reader walks chunk headers from the start;
// a bad header is skipped by searching for the next valid one, a bad payload
// by its (checksummed) length. Every skipped byte range is reported in
// ReadReport::damage with its offset and the reason; nothing is thrown away
// silently and nothing aborts. A file the writer finished (trailer present)
// whose index or trailer is corrupt is damaged (ReadReport::index_damaged),
// not unfinished: its chunks are found by scanning.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::format {

namespace internal {
struct ChunkHeader;
class ChunkDecompressor;
}  // namespace internal

struct Damage {
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string what;
};

struct ReadReport {
  uint16_t major = 0, minor = 0;
  uint64_t file_size = 0;
  bool indexed = false;  // trailer + index found: the writer closed the file
  // The writer closed the file (its index and trailer are there) but they are
  // corrupt: the chunks were found by scanning. Damage, not an unfinished file.
  bool index_damaged = false;
  uint64_t chunks_read = 0;
  uint64_t chunks_damaged = 0;
  uint64_t chunks_skipped_unknown = 0;  // unknown chunk type or table kind (newer writer)
  uint64_t valid_bytes = 0;             // bytes in chunks that were read successfully (+ header)
  // Event rows in damaged chunks, as the footer index lists them (0 without
  // an index: a scan cannot know what a damaged chunk held).
  uint64_t events_lost = 0;
  std::vector<Damage> damage;
  bool clean() const { return damage.empty(); }
  // One line per damage entry, e.g. "byte 4120 (0x1018): table chunk ...".
  std::string Describe() const;
  // "<path> is damaged (4012 of 9000 bytes readable, 64 events skipped)": the
  // first line of every warning or error about a damaged file (Describe()
  // lists the ranges under it).
  std::string Headline(const std::string& path) const;
  // OK when clean; else DataLoss "<Headline>:\n<Describe>", for callers that
  // refuse damaged input (--strict).
  Status DamageStatus(const std::string& path) const;
};

struct ReadOptions {
  // Upper bound on decoded rows x sizeof(row) across the file; protects
  // against malicious files whose constant columns claim huge row counts.
  // 0 = 256 x file size + 1/8 of physical memory (at least 64 MiB;
  // TRACESMITH_MAX_DECODED_MB overrides);
  // Stream applies the same limit to all the event rows of a pass.
  uint64_t max_decoded_bytes = 0;
};

// How many bytes a pass over `input_bytes` of SBT may decode to: 256x the input
// plus an eighth of this machine's memory (TRACESMITH_MAX_DECODED_MB=N overrides).
uint64_t DecodeLimitFor(uint64_t input_bytes);
// Reserves `out`'s event rows once from an index's table chunks (each chunk's
// count capped by what a chunk can hold), a kind only while the bytes its
// counts promise fit `budget`: the counts come from a file, a hint only.
void ReserveFromIndex(const std::vector<ChunkIndexEntry>& chunks, uint64_t budget,
                      model::Trace* out);

class SbtReader {
 public:
  static StatusOr<std::unique_ptr<SbtReader>> Open(const std::string& path);
  // Reads from memory the caller keeps alive (fuzzers, tests).
  static StatusOr<std::unique_ptr<SbtReader>> FromMemory(std::span<const uint8_t> bytes);
  ~SbtReader();

  // Chunks found (through the index or by scanning); available after Open.
  const std::vector<ChunkIndexEntry>& chunks() const { return chunks_; }
  const ReadReport& report() const { return report_; }

  // Decodes every chunk into `out`. Damage is recorded in report(), not
  // returned: the Status is an error only for hard limits.
  Status ReadAll(model::Trace* out, ReadOptions options = {});

  // Streaming read in bounded memory: decodes one chunk at a time into
  // `batch` and calls `on_events(batch, kind)` after each event-table chunk.
  // `batch` then holds the strings and metadata (devices, processes, stack
  // tables, ...) seen so far plus the rows of that one chunk of `kind`; those
  // rows are cleared after the callback returns. A non-OK Status from the
  // callback stops the read and is returned. Damage is recorded in report().
  // `on_end(batch)`, when given, is called once after the last chunk with
  // every string and metadata row of the file, including those written after
  // the last events (a capture's end clock anchor and final stats).
  using EventChunkCallback =
      std::function<Status(const model::Trace& batch, model::TableKind kind)>;
  using EndCallback = std::function<Status(const model::Trace& batch)>;
  // With `wanted`, event-table chunks of the kinds it refuses (by the table
  // kind the chunk index lists) are not decoded at all: a reader of some
  // kinds pays only for those (and a checksum of the others, so damage
  // anywhere is still reported). Strings and metadata are always read.
  using EventKindFilter = std::function<bool(model::TableKind kind)>;
  Status Stream(const EventChunkCallback& on_events, const EndCallback& on_end = {},
                const EventKindFilter& wanted = {});

  // A pull-based pass over the event chunks, in file order: Stream is one
  // loop over it; a reader of several files (a run merged on the fly,
  // cluster/run_source.h) advances each one event chunk at a time in an
  // order of its own (StepEveryEventChunk).
  class EventCursor {
   public:
    EventCursor(EventCursor&&) noexcept = default;
    // Decodes up to the next event chunk (the previous one's rows cleared
    // first): true with its rows in batch() and their kind in *kind; false at
    // the end, batch() then holding every string and metadata row of the file
    // (Stream's on_end). Errors: the decode limits, as Stream; damage goes to
    // the reader's report().
    StatusOr<bool> Next(model::TableKind* kind);
    // The strings and metadata seen so far plus the rows Next gave.
    const model::Trace& batch() const { return batch_; }
    // The same, for a reader that changes the rows Next gave in place or
    // swaps their vector out for an empty one (a run's source translating
    // ids without a copy); the next Next clears that kind's rows, whatever
    // vector holds them then. Strings and metadata must stay as they are.
    model::Trace* mutable_batch() { return &batch_; }
    // The earliest start the chunk index gives for the event chunks Next has
    // not given yet: 0 where that is unknown (a file scanned without its
    // index), UINT64_MAX when none is left.
    uint64_t next_min_ts() const { return next_ < suffix_min_.size() ? suffix_min_[next_] : ~0ull; }
    // From now on Next stops at every chunk the index lists as an event
    // table, the chunks the filter refuses and damaged ones too (true, with
    // no rows: stepped_over()), so the chunks a call reads (metadata
    // included) do not depend on the filter or on damage: a reader of
    // several files can schedule them from the indexes alone.
    void StepEveryEventChunk() { step_every_event_chunk_ = true; }
    // The last Next that gave true stepped over a chunk without rows.
    bool stepped_over() const { return stepped_over_; }
    // Clears the rows the last Next gave now rather than at the next Next,
    // their memory freed (a reader of several files, whose cursors wait
    // their turns, holds no rows for the ones waiting).
    void ReleaseRows() { ClearLastRows(/*free_memory=*/true); }

   private:
    friend class SbtReader;
    EventCursor(SbtReader* reader, const EventKindFilter& wanted);
    void ClearLastRows(bool free_memory = false);
    SbtReader* reader_;
    std::vector<bool> skip_;            // by table kind: not decoded (EventKindFilter)
    std::vector<uint64_t> suffix_min_;  // by chunk: the least min_ts of the event chunks from it on
    model::Trace batch_;
    uint64_t decoded_ = 0, all_decoded_ = 0, limit_ = 0;
    size_t next_ = 0;         // the next chunk to look at
    uint16_t last_kind_ = 0;  // the kind whose rows batch_ holds (0: none)
    bool step_every_event_chunk_ = false, stepped_over_ = false;
  };
  // Starts a pass (as Stream does). The reader must outlive the cursor and
  // run no other pass while it is used.
  EventCursor Events(const EventKindFilter& wanted = {});

  // Calls `on_chunk(payload, offset)` for every chunk of raw type `type`
  // (kFirstRawChunkType..kLastRawChunkType) in file order, with its payload
  // checksum-verified and decompressed, and the chunk's file offset (for
  // error messages). Damaged chunks are recorded in report() and skipped. A
  // non-OK Status from the callback stops the read and is returned.
  using RawChunkCallback = std::function<Status(std::span<const uint8_t> payload, uint64_t offset)>;
  Status ReadRawChunks(uint16_t type, const RawChunkCallback& on_chunk);

  // A 64-bit hash (FNV-1a) of the file's size, version, chunk index and every
  // chunk's header, payload checksum included: a file whose contents changed
  // has another identity (but for a hash collision). For readers that come
  // back to a file later and must know it is the one they read.
  uint64_t ContentIdentity() const;
  // report() restricted to the damage inside the chunks `mine` takes (called
  // with the chunk holding the damage; nullptr for damage outside every
  // chunk), as if the others had been read whole: their damage is left out
  // with the bytes and indexed events it counted. A reader that decodes some
  // kinds now and others later reports each part's damage with that part.
  ReadReport ReportFor(const std::function<bool(const ChunkIndexEntry*)>& mine) const;

 private:
  SbtReader() = default;
  Status Init();
  bool LoadIndex();
  void Scan();
  void AddDamage(uint64_t offset, uint64_t length, std::string what);
  void StartPass();  // ReadAll, Stream, ReadRawChunks: a fresh zstd output budget
  uint64_t DecodeLimit() const;
  Status OverLimit(uint64_t limit) const;
  // After decoding chunk i: damage entries from `first` on are that chunk's;
  // says what the footer index lists in it and counts the events lost.
  void NoteWhatWasSkipped(size_t i, size_t first);
  // Stream: gives back the mapped pages of [begin, end) (whole pages only)
  // once its chunks are decoded, so a pass holds one chunk, not the file.
  void ReleaseMapped(uint64_t begin, uint64_t end);
  // Header, length and payload checksum of chunk i, damage recorded; false when damaged
  // (or found damaged by an earlier pass). `where` names the chunk for messages.
  bool CheckChunk(size_t i, internal::ChunkHeader* h, std::string* where);
  // The raw payload of a checked chunk (decompressed when stored with zstd):
  // nullopt when it is damaged (recorded, named by `where`); an error only
  // when decompression cannot run at all.
  StatusOr<std::optional<std::span<const uint8_t>>> RawPayload(const ChunkIndexEntry& e,
                                                               const internal::ChunkHeader& h,
                                                               const std::string& where);
  // Decodes chunk i into `out`; *kind receives the table kind decoded (0 if none).
  Status DecodeChunk(size_t i, model::Trace* out, uint64_t* decoded_bytes, uint64_t budget,
                     uint16_t* kind);

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap'ed by the destructor when set
  // zstd output per pass over the file: at most 1 GiB + 256 x file size.
  std::unique_ptr<internal::ChunkDecompressor> zstd_;
  // Offsets where damage was found: a chunk there is reported once, and later
  // passes skip it instead of decoding (or decompressing) it again.
  std::unordered_set<uint64_t> damaged_at_;
  std::vector<ChunkIndexEntry> chunks_;
  // Chunks whose bytes (and read or skipped state) the report counts: a
  // command that passes over the file several times counts each chunk once.
  // Bit 1: its bytes are counted; bit 2: it is counted as read or skipped.
  std::vector<uint8_t> counted_;
  // Adds chunk i's `bytes` to the report's readable bytes, once per chunk, and
  // (when given) `*chunks` by one, once per chunk.
  void CountReadable(size_t i, uint64_t bytes, uint64_t* chunks);
  ReadReport report_;
};

// Opens and decodes a whole file. `report` (optional) receives what was recovered.
StatusOr<model::Trace> ReadTraceFile(const std::string& path, ReadReport* report = nullptr,
                                     ReadOptions options = {});

// True when `path` holds replay payloads (raw chunks of profile
// --replay-capture), which a model-level rewrite (ReadTraceFile, then
// WriteTraceFile) would drop; false also when it cannot be opened.
bool HasReplayPayloads(const std::string& path);

}  // namespace tracesmith::format
