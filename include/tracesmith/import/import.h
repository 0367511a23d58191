// Importers: other tools' traces to a TraceSmith trace, so analyze, diff and
// the exporters work on them.
//
//   kineto   torch.profiler / Kineto Chrome-trace JSON (optionally gzip):
//            kernels, copies, memsets, syncs, CUDA runtime/driver calls,
//            CPU ops and annotations (as ranges), device properties.
//   xray     LLVM XRay logs written by compiler-rt (basic and FDR mode):
//            function calls as host ranges, names from the instrumented
//            binary (include/tracesmith/import/xray.h).
//
// docs/export.md ("Import") lists the field mapping and what is not kept.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::importer {

enum class ImportFormat { kKinetoJson, kXRayBasic, kXRayFdr };

// Looks at the first bytes (after gzip decompression): '{' (after whitespace)
// -> Kineto JSON; an XRay file header (u16 version 1-5, u16 type 0 basic or
// 1 FDR) -> XRay log.
StatusOr<ImportFormat> DetectImportFormat(std::string_view head);
const char* ImportFormatName(ImportFormat format);

struct ImportStats {
  uint64_t events = 0;             // events imported
  uint64_t skipped = 0;            // records with no TraceSmith equivalent (flows, XRay custom
                                   // events, call arguments, ...)
  uint64_t unmatched_entries = 0;  // XRay: function entries whose exit is not in the log
  uint64_t unmatched_exits = 0;    // XRay: function exits whose entry is not in the log
  // Non-empty when the input is cut or corrupt part-way: what and at which
  // byte. Everything before that point was imported.
  std::string damage;
  std::vector<std::string> warnings;  // e.g. XRay function names not available
};

struct ImportOptions {
  // XRay: the instrumented binary (or a copy holding its xray_instr_map and
  // symbol table) that names the functions; empty -> "function#<id>".
  std::string xray_binary;
  // Most bytes the input may decompress to; 0: 100x its size on disk, at
  // least 1 GiB (gzip's own ratio rarely passes 20x on a trace; a "gzip
  // bomb" reaches 1000x). The whole input is held in memory while parsing.
  uint64_t max_input_bytes = 0;
};
// The limit ImportFile applies for `options` to a file of `file_bytes` on disk.
uint64_t MaxInputBytes(const ImportOptions& options, uint64_t file_bytes);

// Parses Kineto JSON text (already decompressed). Errors name the byte offset.
StatusOr<model::Trace> ImportKinetoJson(std::string_view json, ImportStats* stats = nullptr);

// The same, reading the JSON as `read` delivers it (bytes into the buffer,
// 0 at the end): the text is never held whole.
StatusOr<model::Trace> ImportKinetoJsonStream(const std::function<size_t(char*, size_t)>& read,
                                              ImportStats* stats = nullptr);

// Reads `path` (gzip-compressed or not), detects the format and imports it
// (Kineto JSON streamed from the file, XRay logs read whole).
StatusOr<model::Trace> ImportFile(const std::string& path, const ImportOptions& options,
                                  ImportFormat* detected = nullptr, ImportStats* stats = nullptr);
inline StatusOr<model::Trace> ImportFile(const std::string& path, ImportFormat* detected = nullptr,
                                         ImportStats* stats = nullptr) {
  return ImportFile(path, ImportOptions{}, detected, stats);
}

}  // namespace tracesmith::importer
