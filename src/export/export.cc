// Export drivers: build the ExportContext (metadata, correlation index, time
// range), then feed the chosen sink every event in start-time order.
#include "tracesmith/export/export.h"

#include <algorithm>
#include <limits>
#include <span>

#include "dot_export.h"
#include "sinks.h"
#include "time_orderer.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

template <typename T>
constexpr bool kIsGpuOp = std::is_same_v<T, KernelEvent> || std::is_same_v<T, MemcpyEvent> ||
                          std::is_same_v<T, MemsetEvent> || std::is_same_v<T, GraphLaunchEvent>;

// Pass-one bookkeeping over a batch of events (the time range in locals:
// this loop reads every row of the trace). With `hints`, also what ordering
// the rows needs (the rows are read once for both).
void Scan(const Trace& batch, ExportContext* ctx, RowOrderHints* hints = nullptr) {
  uint64_t lo = ctx->event_count == 0 ? UINT64_MAX : ctx->min_ts, hi = ctx->max_ts;
  uint64_t count = ctx->event_count;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      const auto& rows = batch.Rows<T>();
      auto visit = [&](const T& e) {
        uint64_t s = EventStart(e), en = std::max(EventEnd(e), s);
        lo = std::min(lo, s);
        hi = std::max(hi, en);
        if constexpr (std::is_same_v<T, ApiEvent>) {
          if (e.correlation_id != 0) ctx->correlations.AddApi(e.pid, e.correlation_id);
          ctx->max_external_id = std::max(ctx->max_external_id, e.external_id);
        } else if constexpr (std::is_same_v<T, NvtxRangeEvent>) {
          ctx->max_external_id = std::max(ctx->max_external_id, e.external_id);
        } else if constexpr (kIsGpuOp<T>) {
          if (e.correlation_id != 0) ctx->correlations.AddGpu(e.pid, e.correlation_id);
        }
        return s;
      };
      if (hints != nullptr) {
        ScanRowOrder(rows, &hints->For<T>(), visit);
      } else {
        for (const T& e : rows) visit(e);
      }
      count += rows.size();
      if constexpr (std::is_same_v<T, MemoryEvent>) ctx->memory_events += rows.size();
      if constexpr (std::is_same_v<T, PcSampleEvent>) ctx->pc_samples.AddSamples(rows);
      if constexpr (std::is_same_v<T, KernelEvent>)
        if (ctx->pc_sampled) ctx->pc_samples.AddKernels(rows);
    }
  });
  if (count > 0) ctx->min_ts = lo;
  ctx->max_ts = hi;
  ctx->event_count = count;
}

// Appends the strings and metadata rows of `src` that `dst` does not have yet
// (the streaming reader's batch only grows).
void CopyNewMetadata(const Trace& src, Trace* dst) {
  for (uint32_t id = dst->strings.size(); id < src.strings.size(); ++id)
    if (src.strings.Has(id)) dst->strings.Set(id, src.strings.Get(id));
  ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent) {
      const auto& in = src.Rows<T>();
      auto& out = dst->Rows<T>();
      if (in.size() > out.size()) out.insert(out.end(), in.begin() + out.size(), in.end());
    }
  });
}

// Rows of `pid` only (ExportOptions::only_pid).
template <typename T>
void CopyRowsOf(const std::vector<T>& in, uint32_t pid, std::vector<T>* out) {
  out->clear();
  for (const T& row : in)
    if (row.pid == pid) out->push_back(row);
}

// The event rows of `batch` that belong to `pid` (all of them without one).
const Trace& EventsOf(const Trace& batch, std::optional<uint32_t> pid, Trace* scratch) {
  if (!pid) return batch;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) CopyRowsOf(batch.Rows<T>(), *pid, &scratch->Rows<T>());
  });
  return *scratch;
}

// `meta` with the metadata rows of other processes left out (frames and
// stack nodes have no pid and stay: ids are positions).
void KeepMetadataOf(uint32_t pid, Trace* meta) {
  ForEachRecordType([&]<typename T>() {
    if constexpr (!RecordTraits<T>::kIsEvent && requires(T t) { t.pid; }) {
      std::vector<T> kept;
      CopyRowsOf(meta->Rows<T>(), pid, &kept);
      meta->Rows<T>() = std::move(kept);
    }
  });
}

StatusOr<std::unique_ptr<EventSink>> MakeSink(ExportFormat format, OutputFile* out,
                                              const std::string& path) {
  switch (format) {
    case ExportFormat::kPerfetto:
      return MakePerfettoSink(out);
    case ExportFormat::kJson:
      return MakeJsonSink(out);
    case ExportFormat::kCsv:
      return MakeCsvSink(out);
    case ExportFormat::kSqlite:
      return MakeSqliteSink(path);
    case ExportFormat::kDot:
    case ExportFormat::kFolded:
      break;  // not streamed formats (dot_export.cc, report/flame.h)
  }
  return Internal("unknown export format");
}

// Runs `feed(orderer)` with a sink for `format`, then finishes and commits
// the output: written under a temporary name beside `out_path` and renamed
// over it only when complete, so on any error `out_path` stays as it was.
template <typename Feed>
StatusOr<ExportStats> Run(ExportFormat format, const std::string& out_path,
                          std::span<const std::string> inputs, const ExportContext& ctx,
                          Feed&& feed) {
  std::unique_ptr<OutputFile> out;
  std::unique_ptr<AtomicFile> db;  // SQLite opens its file by name
  if (format == ExportFormat::kSqlite) {
    ASSIGN_OR_RETURN(db, AtomicFile::Create(out_path, inputs));
    RETURN_IF_ERROR(db->CloseFd());
  } else {
    ASSIGN_OR_RETURN(
        out, OutputFile::Open(out_path, ctx.options.gzip && format == ExportFormat::kJson, inputs));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<EventSink> sink,
                   MakeSink(format, out.get(), db ? db->temp_path() : out_path));
  RETURN_IF_ERROR(sink->Begin(ctx));
  TimeOrderer orderer(sink.get(), ctx.options.max_buffered_events);
  RETURN_IF_ERROR(feed(orderer));
  orderer.ReleaseAll();
  ExportStats stats;
  RETURN_IF_ERROR(sink->Finish(&stats));
  stats.events = ctx.event_count;
  if (out) {
    RETURN_IF_ERROR(out->Commit());
    stats.bytes = out->file_bytes();
  } else {
    auto size = FileSize(db->temp_path());
    stats.bytes = size.ok() ? *size : 0;
    RETURN_IF_ERROR(db->Commit());
  }
  return stats;
}

}  // namespace

// export/ may not depend on report/ (docs/architecture.md), which owns the
// flame-graph data; the CLI and the Python package call it directly.
constexpr const char* kFoldedElsewhere =
    "the folded format is written by report::WriteFoldedFile (tracesmith/report/flame.h)";

StatusOr<ExportFormat> ParseExportFormat(std::string_view name) {
  if (name == "perfetto" || name == "pftrace" || name == "proto") return ExportFormat::kPerfetto;
  if (name == "json" || name == "chrome" || name == "kineto") return ExportFormat::kJson;
  if (name == "sqlite" || name == "sql") return ExportFormat::kSqlite;
  if (name == "csv") return ExportFormat::kCsv;
  if (name == "dot") return ExportFormat::kDot;
  if (name == "folded") return ExportFormat::kFolded;
  return InvalidArgument("unknown export format '" + std::string(name) +
                         "' (expected perfetto, json, sqlite, csv, dot or folded)");
}

const char* ExportFormatName(ExportFormat format) {
  switch (format) {
    case ExportFormat::kPerfetto:
      return "perfetto";
    case ExportFormat::kJson:
      return "json";
    case ExportFormat::kSqlite:
      return "sqlite";
    case ExportFormat::kCsv:
      return "csv";
    case ExportFormat::kDot:
      return "dot";
    case ExportFormat::kFolded:
      return "folded";
  }
  return "?";
}

const char* ExportFormatExtension(ExportFormat format, bool gzip) {
  switch (format) {
    case ExportFormat::kPerfetto:
      return ".pftrace";
    case ExportFormat::kJson:
      return gzip ? ".json.gz" : ".json";
    case ExportFormat::kSqlite:
      return ".sqlite";
    case ExportFormat::kCsv:
      return ".csv";
    case ExportFormat::kDot:
      return ".dot";
    case ExportFormat::kFolded:
      return ".folded";
  }
  return "";
}

StatusOr<ExportStats> ExportTrace(const Trace& trace, ExportFormat format,
                                  const std::string& out_path, const ExportOptions& options) {
  if (format == ExportFormat::kDot)
    return InvalidArgument("the dot format is exported from an SBT file (ExportSbtFile)");
  if (format == ExportFormat::kFolded) return InvalidArgument(kFoldedElsewhere);
  if (options.only_pid) {  // one process's copy, exported whole
    Trace one;
    one.strings = trace.strings;
    ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent) one.Rows<T>() = trace.Rows<T>();
    });
    KeepMetadataOf(*options.only_pid, &one);
    Trace events;
    EventsOf(trace, options.only_pid, &events);
    ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) one.Rows<T>() = std::move(events.Rows<T>());
    });
    ExportOptions rest = options;
    rest.only_pid.reset();
    return ExportTrace(one, format, out_path, rest);
  }
  ExportContext ctx;
  ctx.meta = &trace;
  ctx.options = options;
  ctx.pc_sampled = !trace.Rows<PcSampleEvent>().empty();
  RowOrderHints hints;
  Scan(trace, &ctx, &hints);
  return Run(format, out_path, {}, ctx, [&](TimeOrderer& orderer) {
    orderer.AddView(trace, &hints);
    return OkStatus();
  });
}

StatusOr<ExportStats> ExportSbtFile(const std::string& sbt_path, ExportFormat format,
                                    const std::string& out_path, const ExportOptions& options,
                                    format::ReadReport* report) {
  // ExportSource refuses a bad output or option before any work.
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(sbt_path));
  return ExportSource(*source, format, out_path, options, report);
}

StatusOr<ExportStats> ExportSource(format::TraceSource& source, ExportFormat format,
                                   const std::string& out_path, const ExportOptions& options,
                                   format::ReadReport* report) {
  // Refused before any work: the output must not be an input (it would be
  // replaced by its own export) nor a directory, device or FIFO.
  const std::vector<std::string> inputs = source.files();
  RETURN_IF_ERROR(CheckOutputPath(out_path, inputs));
  if (format == ExportFormat::kFolded) return InvalidArgument(kFoldedElsewhere);
  if (format == ExportFormat::kDot) {
    if (options.only_pid)
      return InvalidArgument("the dot format shows the whole trace (no one-process export)");
    return ExportDotFile(source, out_path, options, report);
  }
  ExportContext ctx;
  ctx.options = options;
  Trace meta;
  ctx.meta = &meta;
  Trace scratch;  // a chunk's rows of options.only_pid
  // (A file without its footer index was scanned: its chunks' kinds are 0, unknown.)
  const std::vector<format::ChunkIndexEntry> chunks = source.TableChunks();
  for (const format::ChunkIndexEntry& c : chunks)
    ctx.pc_sampled |=
        c.table_kind == static_cast<uint16_t>(TableKind::kPcSample) || c.table_kind == 0;
  // Two passes over one source: a chunk of a file found damaged by the first
  // is skipped by the second, not decompressed and reported again.
  // The metadata written after the last events too (a capture's end clock
  // anchor and final stats; a run's last input's merge rows).
  RETURN_IF_ERROR(source.Stream(
      [&](const Trace& batch, TableKind) {
        CopyNewMetadata(batch, &meta);
        Scan(EventsOf(batch, options.only_pid, &scratch), &ctx);
        return OkStatus();
      },
      [&](const Trace& batch) {
        CopyNewMetadata(batch, &meta);
        return OkStatus();
      }));
  if (options.only_pid) KeepMetadataOf(*options.only_pid, &meta);
  // The first pass has seen every chunk: all the damage there is.
  const format::ReadReport damage = source.report();
  if (options.refuse_damaged_input) RETURN_IF_ERROR(damage.DamageStatus(source.name()));
  if (report) *report = damage;
  // Watermark after the k-th event chunk: the earliest start any later event
  // chunk can hold, from the chunk index. Without an index (or min_ts 0 =
  // unknown) events are held back until the cap releases the oldest.
  std::vector<uint64_t> suffix_min;
  for (const auto& c : chunks)
    if (IsKnownTableKind(c.table_kind) && c.table_kind < static_cast<uint16_t>(TableKind::kDevice))
      suffix_min.push_back(c.min_ts);
  for (size_t i = suffix_min.size(); i-- > 1;)
    suffix_min[i - 1] = std::min(suffix_min[i - 1], suffix_min[i]);
  return Run(format, out_path, inputs, ctx, [&](TimeOrderer& orderer) {
    size_t chunk = 0;
    return source.Stream([&](const Trace& batch, TableKind) {
      orderer.Add(EventsOf(batch, options.only_pid, &scratch));
      ++chunk;
      orderer.Release(chunk < suffix_min.size() ? suffix_min[chunk] : 0);
      return OkStatus();
    });
  });
}

}  // namespace tracesmith::exporter
