// Exporters: a TraceSmith trace (in memory or an SBT file, streamed) to the
// formats other tools read.
//
//   perfetto  Perfetto protobuf (TracePacket stream), for ui.perfetto.dev and
//             trace processor. Written field by field (no Perfetto SDK).
//   json      Chrome trace JSON in the schema torch.profiler (Kineto) writes,
//             optionally gzip-compressed.
//   sqlite    An SQLite database with the tables and columns of an
//             `nsys export --type sqlite` file, so nsys SQL recipes run on it.
//   csv       One row per kernel, copy and memset, for spreadsheets.
//   dot       Graphviz of the dependency graph (critical path in red), from an
//             SBT file only (ExportSbtFile): the earliest nodes of a window.
//   folded    Folded stacks (flamegraph.pl, inferno, speedscope): GPU time by
//             host call stack. Built by report/flame.h (report::WriteFoldedFile,
//             which `tracesmith export -f folded` calls); export/ does not
//             depend on report/, so ExportTrace/ExportSbtFile refuse it.
//
// Every exporter sees events in start-time order (a bounded reorder window
// over the SBT chunks, see time_orderer.h), so streaming a large file keeps
// memory bounded: strings and metadata stay, event rows do not.
// The field-by-field mapping of each format is documented in docs/export.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::exporter {

enum class ExportFormat { kPerfetto, kJson, kSqlite, kCsv, kDot, kFolded };

// "perfetto" (also "pftrace", "proto"), "json", "sqlite", "csv", "dot", "folded".
StatusOr<ExportFormat> ParseExportFormat(std::string_view name);
const char* ExportFormatName(ExportFormat format);
// Conventional file extension, e.g. ".pftrace".
const char* ExportFormatExtension(ExportFormat format, bool gzip);

// What torch.profiler writes as the trace's "distributedInfo" (a rank of a
// distributed job): tools for multi-rank traces (HTA) need `rank`.
struct DistributedInfo {
  int32_t rank = -1;        // < 0: not written
  uint32_t world_size = 0;  // 0: unknown, left out
  std::string backend;      // "nccl", ...; empty: unknown, left out
};

struct ExportOptions {
  bool gzip = false;  // json only: write a gzip stream (torch.profiler's .json.gz)
  // Events held back to restore start-time order across SBT chunks. Past
  // this, the oldest are released anyway; anything arriving later that
  // would break nesting goes to an extra track instead (never lost).
  // 2M events: about 300 MB of rows at most.
  uint64_t max_buffered_events = 2u << 20;
  // Window of the per-device GPU utilization counter (Perfetto). 1 ms: fine
  // enough to see gaps between iterations, coarse enough to stay tiny.
  uint64_t utilization_window_ns = 1'000'000;
  // ExportSbtFile: a damaged input file is an error (ReadReport::DamageStatus)
  // found before the output is opened, so nothing is written (--strict).
  // Otherwise the readable part is exported and the damage goes to `report`.
  bool refuse_damaged_input = false;
  // dot: at most this many nodes (the earliest of the window), and the window
  // relative to the trace start ("2ms"; empty: open).
  size_t dot_node_limit = 500;
  std::string from, to;
  // Only this process's rows (events and the metadata of its pid): one rank
  // of a merged trace. Not for dot.
  std::optional<uint32_t> only_pid;
  // json: the top-level "distributedInfo" object, when rank >= 0.
  DistributedInfo distributed;
};

struct ExportStats {
  uint64_t events = 0;         // event rows read
  uint64_t bytes = 0;          // bytes written (compressed size with gzip)
  uint64_t kernel_events = 0;  // kernels exported
  uint64_t kernel_bytes = 0;   // perfetto: bytes of packets that carry kernel slices
  uint64_t flows = 0;          // launch -> GPU op links written
  uint64_t extra_lanes = 0;    // tracks added because slices overlapped on one track
  uint64_t clamped_samples =
      0;  // counter samples that arrived out of order (written at the last time)
  // perfetto: lanes of the "Allocations" tracks (the most allocations live at
  // once, per process and device), and allocations past the lane limit (1024
  // per process and device) that are in the counters but have no slice.
  uint64_t allocation_lanes = 0;
  uint64_t allocations_not_drawn = 0;
};

// Exports an in-memory trace (not kDot: InvalidArgument).
StatusOr<ExportStats> ExportTrace(const model::Trace& trace, ExportFormat format,
                                  const std::string& out_path, const ExportOptions& options = {});

// Streams an SBT file to `out_path` (two passes over the file: the first
// collects metadata and which correlation ids have both a launch and a GPU
// op, so every flow written has both ends). `report` (optional) receives what
// the reader recovered from a damaged file, to tell the user.
StatusOr<ExportStats> ExportSbtFile(const std::string& sbt_path, ExportFormat format,
                                    const std::string& out_path, const ExportOptions& options = {},
                                    format::ReadReport* report = nullptr);
// The same from any source (ExportSbtFile is this on the file's): a run
// merged on the fly (cluster/run_source.h) exports as its merged file would.
// The output must not be one of source.files().
StatusOr<ExportStats> ExportSource(format::TraceSource& source, ExportFormat format,
                                   const std::string& out_path, const ExportOptions& options = {},
                                   format::ReadReport* report = nullptr);

}  // namespace tracesmith::exporter
