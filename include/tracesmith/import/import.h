// Importers: other tools' traces to a TraceSmith trace, so analyze, diff and
// the exporters work on them.
//
//   kineto   torch.profiler / Kineto Chrome-trace JSON (optionally gzip):
//            kernels, copies, memsets, syncs, CUDA runtime/driver calls,
//            CPU ops and annotations (as ranges), device properties.
//
// docs/export.md ("Import") lists the field mapping and what is not kept.
#pragma once

#include <string>
#include <string_view>

#include "tracesmith/base/status.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::importer {

enum class ImportFormat { kKinetoJson };

// Looks at the first bytes: '{' (after whitespace) or a gzip stream -> Kineto JSON.
StatusOr<ImportFormat> DetectImportFormat(std::string_view head);
const char* ImportFormatName(ImportFormat format);

struct ImportStats {
  uint64_t events = 0;   // events imported
  uint64_t skipped = 0;  // trace events with no TraceSmith equivalent (flows, spans, ...)
};

// Parses Kineto JSON text (already decompressed). Errors name the byte offset.
StatusOr<model::Trace> ImportKinetoJson(std::string_view json, ImportStats* stats = nullptr);

// Reads `path` (gzip-compressed or not), detects the format and imports it.
StatusOr<model::Trace> ImportFile(const std::string& path, ImportFormat* detected = nullptr,
                                  ImportStats* stats = nullptr);

}  // namespace tracesmith::importer
