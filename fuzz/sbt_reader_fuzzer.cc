// Fuzzes the SBT reader: open (header, index or scan), full decode, the
// streaming decode and the replay payload chunks, on one reader. Any crash,
// hang, sanitizer report or unbounded allocation is a bug; damaged input must
// only produce Status/ReadReport.
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>

#include "tracesmith/format/sbt_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracesmith;
  auto reader = format::SbtReader::FromMemory(std::span(data, size));
  if (!reader.ok()) return 0;
  model::Trace trace;
  (void)(*reader)->ReadAll(&trace, {.max_decoded_bytes = 64u << 20});
  (void)(*reader)->report().Describe();
  size_t rows = 0;
  (void)(*reader)->Stream([&](const model::Trace& batch, model::TableKind) {
    rows += batch.EventCount();
    return OkStatus();
  });
  // Replay payload chunks, each raw type present once (a third pass: chunks
  // found damaged above are skipped).
  std::set<uint16_t> raw_types;
  for (const format::ChunkIndexEntry& e : (*reader)->chunks())
    if (e.type >= format::kFirstRawChunkType && e.type <= format::kLastRawChunkType)
      raw_types.insert(e.type);
  for (uint16_t type : raw_types)
    (void)(*reader)->ReadRawChunks(type,
                                   [](std::span<const uint8_t>, uint64_t) { return OkStatus(); });
  return 0;
}
