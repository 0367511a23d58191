// Fuzzes the SBT reader: open (header, index or scan), full decode and the
// streaming decode. Any crash, hang, sanitizer report or unbounded
// allocation is a bug; damaged input must only produce Status/ReadReport.
#include <cstddef>
#include <cstdint>
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
  return 0;
}
