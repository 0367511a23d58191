// LLVM XRay import: logs written by compiler-rt's XRay runtime, in basic
// mode (fixed 32-byte records) and FDR mode (per-thread buffers of 8-byte
// function records with TSC deltas and 16-byte metadata records), become
// host ranges (NvtxRangeEvent, domain "xray") per thread.
//
// The log holds function ids only; the names live in the instrumented
// binary: its xray_instr_map section lists the sleds (one per entry/exit
// point) with their function's address, function ids are numbered as the
// runtime numbers them, and the ELF symbol table names the addresses.
// docs/export.md ("Import: LLVM XRay") gives the mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/import/import.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::importer {

// Function id -> address and name of one instrumented binary.
struct XRayInstrMap {
  std::string binary;               // file name (for the Process row), may be empty
  std::vector<uint64_t> addresses;  // addresses[id - 1]: the function's link-time address
  std::vector<std::string> names;   // names[id - 1]: demangled symbol, "" when none covers it
  uint64_t sleds = 0;

  // "function#<id>" when the id is not in the map or has no symbol.
  std::string Name(int32_t id) const;
};

// Parses an ELF64 little-endian image (executable, shared object, or a copy
// made with `objcopy -j .text -j xray_instr_map`). Errors name the section
// and byte offset.
StatusOr<XRayInstrMap> ParseXRayInstrMap(std::string_view elf);
StatusOr<XRayInstrMap> LoadXRayInstrMap(const std::string& path);

// Imports an XRay log (basic or FDR, versions 1-5). `map` may be null: names
// fall back to "function#<id>" and a warning says so. A log cut or corrupt
// after its header imports what precedes the damage (ImportStats::damage
// names the byte offset); a bad header is an error.
StatusOr<model::Trace> ImportXRayLog(std::string_view log, const XRayInstrMap* map,
                                     ImportStats* stats = nullptr);

}  // namespace tracesmith::importer
