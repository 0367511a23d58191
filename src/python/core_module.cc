// tracesmith._core: the C++ libraries behind the Python package (python/tracesmith).
//
// Traces are read chunk by chunk (SbtReader::Stream) into one growing column
// per field of each record kind, handed to NumPy without a copy: memory is the
// columns, never a Python object per event. Everything else calls the same
// library functions the CLI calls. Errors raise tracesmith.TraceError with the
// Status message (file, byte offset).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "column_buffer.h"
#include "field_dtype.h"
#include "tracesmith/analysis/diff.h"
#include "tracesmith/analysis/event_filter.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"
#include "tracesmith/capture/device_query.h"
#include "tracesmith/capture/run_command.h"
#include "tracesmith/cluster/merge.h"
#include "tracesmith/cluster/run_files.h"
#include "tracesmith/export/export.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/import/import.h"
#include "tracesmith/job/job_report.h"
#include "tracesmith/memory/memory_report.h"
#include "tracesmith/model/enum_fields.h"
#include "tracesmith/model/records.h"
#include "tracesmith/model/trace.h"
#include "write_tables.h"

#ifndef TS_VERSION
#define TS_VERSION "dev"
#endif

namespace py = pybind11;

namespace tracesmith::python {
namespace {

PyObject* g_trace_error = nullptr;    // tracesmith.TraceError (python/tracesmith/_errors.py)
PyObject* g_trace_changed = nullptr;  // tracesmith.TraceChangedError (a TraceError)

[[noreturn]] void Raise(const Status& st) {
  PyErr_SetString(g_trace_error, st.message().c_str());
  throw py::error_already_set();
}

template <typename T>
T Check(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(v).value();
}

size_t FieldBytes(model::FieldType t) {
  switch (t) {
    case model::FieldType::kU8:
      return 1;
    case model::FieldType::kU16:
      return 2;
    case model::FieldType::kU32:
    case model::FieldType::kI32:
      return 4;
    default:
      return 8;
  }
}

// The distinct config tuples (launch configuration, stream, device, name, ...)
// of one record kind, each row holding the index of its tuple: the SBT
// format's own dictionary encoding, kept across chunks. A kernel row is then
// 44 bytes in memory instead of ~120.
struct ConfigIndex {
  virtual ~ConfigIndex() = default;
};
template <typename T>
struct TypedConfigIndex : ConfigIndex {
  using Key = typename T::ConfigKey;
  struct Hash {
    size_t operator()(const Key& k) const { return size_t(T::HashConfig(k)); }
  };
  std::vector<Key> uniques;
  std::unordered_map<Key, uint32_t, Hash> index;  // tuple -> its place in `uniques`

  // The index of `k` in `uniques`, added when new.
  uint32_t CodeOf(const Key& k) {
    auto [it, fresh] = index.try_emplace(k, uint32_t(uniques.size()));
    if (fresh) uniques.push_back(k);
    return it->second;
  }
};

// An array that owns a column's bytes (no copy).
py::array OwningArray(std::unique_ptr<ColumnBuffer> bytes, const char* dtype, size_t n) {
  auto* raw = bytes.release();
  py::capsule owner(raw, [](void* p) { delete static_cast<ColumnBuffer*>(p); });
  return py::array(py::dtype(dtype), {py::ssize_t(n)}, {}, raw->data(), owner);
}

// One record kind's rows, appended a chunk at a time: a column per non-config
// field, and per row the index of its config tuple.
struct Columns {
  bool ready = false;
  size_t rows = 0;
  std::vector<const model::FieldDesc*> data_fields;
  std::vector<std::unique_ptr<ColumnBuffer>> data;  // one per data field
  std::unique_ptr<ColumnBuffer> codes;              // u32 per row
  std::unique_ptr<ConfigIndex> config;

  template <typename T>
  void Init() {
    if (ready) return;
    ready = true;
    using Traits = model::RecordTraits<T>;
    for (size_t f = 0; f < Traits::kNumFields; ++f) {
      if (Traits::kAllFields[f].role == model::FieldRole::kConfig) continue;
      data_fields.push_back(&Traits::kAllFields[f]);
      data.push_back(std::make_unique<ColumnBuffer>());
    }
    codes = std::make_unique<ColumnBuffer>();
    config = std::make_unique<TypedConfigIndex<T>>();
  }

  // Room for `n` more rows (from the file's index), so the columns are
  // allocated once rather than grown (which copies).
  template <typename T>
  void Reserve(uint64_t n) {
    Init<T>();
    for (size_t f = 0; f < data_fields.size(); ++f)
      data[f]->Reserve(data[f]->size() + n * FieldBytes(data_fields[f]->type));
    codes->Reserve(codes->size() + 4 * n);
  }

  template <size_t W, typename T>
  static void CopyField(const T* rows_in, size_t n, uint16_t offset, uint8_t* out) {
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(out, reinterpret_cast<const uint8_t*>(rows_in + i) + offset, W);
      out += W;
    }
  }

  template <typename T>
  void Append(const std::vector<T>& rows_in) {
    Init<T>();
    for (size_t f = 0; f < data_fields.size(); ++f)
      data[f]->Resize(FieldBytes(data_fields[f]->type) * (rows + rows_in.size()));
    codes->Resize(4 * (rows + rows_in.size()));
    for (size_t f = 0; f < data_fields.size(); ++f) {
      const model::FieldDesc& d = *data_fields[f];
      const size_t w = FieldBytes(d.type);
      uint8_t* out = data[f]->data() + w * rows;
      switch (w) {
        case 1:
          CopyField<1>(rows_in.data(), rows_in.size(), d.offset, out);
          break;
        case 2:
          CopyField<2>(rows_in.data(), rows_in.size(), d.offset, out);
          break;
        case 4:
          CopyField<4>(rows_in.data(), rows_in.size(), d.offset, out);
          break;
        default:
          CopyField<8>(rows_in.data(), rows_in.size(), d.offset, out);
          break;
      }
    }
    auto& cfg = static_cast<TypedConfigIndex<T>&>(*config);
    uint8_t* out = codes->data() + 4 * rows;
    for (const T& r : rows_in) {
      const uint32_t code = cfg.CodeOf(r.GetConfig());
      std::memcpy(out, &code, 4);
      out += 4;
    }
    rows += rows_in.size();
  }

  // {"fields": names in the format's order, "columns": {data field: ndarray},
  //  "codes": u4 ndarray (row -> config tuple), "config": {config field: ndarray
  //  of each tuple's value}}; the arrays own their bytes (no copy).
  template <typename T>
  py::dict ToDict() {
    Init<T>();
    using Traits = model::RecordTraits<T>;
    py::dict out, columns, config_values;
    py::list names;
    for (size_t f = 0; f < Traits::kNumFields; ++f) names.append(Traits::kAllFields[f].name);
    for (size_t f = 0; f < data_fields.size(); ++f)
      columns[data_fields[f]->name] =
          OwningArray(std::move(data[f]), FieldDtype(data_fields[f]->type), rows);
    auto& cfg = static_cast<TypedConfigIndex<T>&>(*config);
    for (size_t f = 0; f < Traits::kNumConfigFields; ++f) {
      const model::FieldDesc& d = Traits::kAllConfigFields[f];
      // (config descriptors say kDelta: their type is the field's)
      const size_t w = FieldBytes(d.type);
      auto bytes = std::make_unique<ColumnBuffer>();
      bytes->Resize(w * cfg.uniques.size());
      for (size_t u = 0; u < cfg.uniques.size(); ++u)
        std::memcpy(bytes->data() + u * w,
                    reinterpret_cast<const uint8_t*>(&cfg.uniques[u]) + d.offset, w);
      config_values[d.name] = OwningArray(std::move(bytes), FieldDtype(d.type), cfg.uniques.size());
    }
    out["fields"] = names;
    out["columns"] = columns;
    out["codes"] = OwningArray(std::move(codes), "u4", rows);
    out["config"] = config_values;
    return out;
  }
};

// What the CLI prints about a damaged file (its headline and byte ranges);
// empty when the file is clean.
std::string DamageText(const std::string& path, const format::ReadReport& damage) {
  return damage.clean() ? std::string() : damage.Headline(path) + ":\n" + damage.Describe();
}

// Which labels a pass takes: a list, or every one.
struct LabelSet {
  bool all = false;
  std::vector<std::string> labels;
  bool Has(const char* label) const {
    return all || std::find(labels.begin(), labels.end(), label) != labels.end();
  }
};

// The event kind (label) of an event-table chunk of the index; nullptr for
// every other chunk (strings, metadata tables, replay payloads).
const char* EventLabelOf(const format::ChunkIndexEntry& e) {
  const char* label = nullptr;
  if (e.type != uint16_t(format::ChunkType::kTable)) return label;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    if (Traits::kIsEvent && uint16_t(Traits::kKind) == e.table_kind) label = Traits::kLabel;
  });
  return label;
}

// The reader's report restricted to the damage of the chunks `mine` takes
// (called with the chunk's event label, nullptr for the strings, metadata and
// the rest): a lazily loaded trace reports each event kind's damage at the
// access that decodes it.
format::ReadReport DamageOf(const format::SbtReader& reader,
                            const std::function<bool(const char*)>& mine) {
  return reader.ReportFor([&](const format::ChunkIndexEntry* chunk) {
    return mine(chunk ? EventLabelOf(*chunk) : nullptr);
  });
}

[[noreturn]] void RaiseChanged(const std::string& message) {
  PyErr_SetString(g_trace_changed, message.c_str());
  throw py::error_already_set();
}

// A trace file opened for one pass: the reader, and the same file held open
// to say what the pass read: its identity (the chunk index and every chunk's
// header, with its payload checksum: any change to the contents changes it)
// and whether it was written to while being read (size and mtime). A trace
// loaded lazily reads its other kinds later only from the file it loaded.
class TraceFile {
 public:
  // `later`: a pass for a trace loaded earlier, its file called `what` in
  // messages (empty: the first pass, whose errors are the reader's).
  TraceFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
    fd_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    const int open_errno = errno;
    if (fd_.fd < 0 && later())
      RaiseChanged(what_ +
                   (open_errno == ENOENT ? " is gone since tracesmith.load() read it ("
                                         : " cannot be opened again since tracesmith.load() "
                                           "read it (") +
                   std::strerror(open_errno) + "): its other rows cannot be read; load it again");
    if (fd_.fd >= 0 && (::fstat(fd_.fd, &st_) != 0 || !S_ISREG(st_.st_mode)))
      fd_.Close();  // not a regular file: the reader says so
    StatusOr<std::unique_ptr<format::SbtReader>> r = format::SbtReader::Open(path);
    if (!r.ok() && later())
      RaiseChanged(what_ + " changed since tracesmith.load() read it (" + r.status().message() +
                   "); load it again");
    reader_ = Check(std::move(r));
    // The reader opened the path again: the same file as ours?
    struct stat now {};
    if (fd_.fd < 0 || ::stat(path.c_str(), &now) != 0 || now.st_ino != st_.st_ino ||
        now.st_dev != st_.st_dev || uint64_t(st_.st_size) != reader_->report().file_size)
      RaiseChanged(Name() + " was replaced while it was being opened; load it again");
  }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  format::SbtReader& reader() { return *reader_; }

  // The file's contents as the reader saw them (SbtReader::ContentIdentity).
  uint64_t Identity() const { return reader_->ContentIdentity(); }

  // Raises TraceChangedError when the file was written to during the pass.
  void CheckUnchanged() const {
    struct stat now {};
    if (::fstat(fd_.fd, &now) != 0 || now.st_size != st_.st_size ||
        now.st_mtim.tv_sec != st_.st_mtim.tv_sec || now.st_mtim.tv_nsec != st_.st_mtim.tv_nsec)
      RaiseChanged(Name() +
                   " was written to while it was being read; nothing of it is kept, "
                   "load it again");
  }

 private:
  bool later() const { return !what_.empty(); }
  std::string Name() const { return later() ? what_ : path_; }

  struct Fd {  // (a member: closed also when the constructor raises)
    int fd = -1;
    ~Fd() { Close(); }
    void Close() {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  };

  std::string path_, what_;
  Fd fd_;
  struct stat st_ {};
  std::unique_ptr<format::SbtReader> reader_;
};

// One streaming pass into columns: the event kinds `events` takes and, with
// `metadata`, the metadata kinds and the strings. Columns are reserved from
// the file's index (trusted only while the reservation stays within what the
// reader would decode anyway: a forged index is ignored).
Status StreamColumns(format::SbtReader& reader, const LabelSet& events, bool metadata,
                     std::map<std::string, Columns>* tables, std::vector<std::string>* strings) {
  {
    std::map<uint16_t, uint64_t> claimed;
    for (const format::ChunkIndexEntry& c : reader.chunks()) claimed[c.table_kind] += c.rows;
    uint64_t budget = 64 * reader.report().file_size;
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (Traits::kIsEvent ? !events.Has(Traits::kLabel) : !metadata) return;
      uint64_t n = claimed[uint16_t(Traits::kKind)], bytes = n * sizeof(T);
      if (n == 0 || bytes > budget) return;
      budget -= bytes;
      (*tables)[Traits::kLabel].template Reserve<T>(n);
    });
  }
  auto add_rows = [&](const model::Trace& batch, model::TableKind kind) {
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (Traits::kIsEvent && Traits::kKind == kind && events.Has(Traits::kLabel))
        (*tables)[Traits::kLabel].Append(batch.Rows<T>());
    });
    return OkStatus();
  };
  auto at_end = [&](const model::Trace& batch) {
    if (!metadata) return OkStatus();
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (!Traits::kIsEvent) (*tables)[Traits::kLabel].Append(batch.Rows<T>());
    });
    strings->reserve(batch.strings.size());
    for (uint32_t i = 0; i < batch.strings.size(); ++i) strings->emplace_back(batch.strings.Get(i));
    return OkStatus();
  };
  // Other event kinds' chunks are not even decoded (only checksummed).
  format::SbtReader::EventKindFilter want_kind;
  if (!events.all)
    want_kind = [&](model::TableKind k) { return events.Has(model::TableKindLabel(k)); };
  return reader.Stream(add_rows, at_end, want_kind);
}

py::list DamageList(const format::ReadReport& report) {
  py::list damage;
  for (const format::Damage& d : report.damage)
    damage.append(py::make_tuple(d.offset, d.length, d.what));
  return damage;
}

// Column dicts of record kinds, by label ("kernel", "memcpy", ...), with the
// kind's fields even when it has no rows. `kinds` (labels): only these event
// kinds get rows (all when empty); metadata kinds always do.
//
// `lazy` (a file with its index): the strings, the metadata kinds and the
// event kinds of `kinds` only (none when empty); "pending" lists the event
// kinds the file has chunks of that were left for read_kinds, and the damage
// (warning, strict) is that of what was read: the other kinds' chunks are
// only checksummed, their damage is theirs to report. A file without its
// index (unfinished, or its index damaged) cannot tell one kind's chunks from
// another's without decoding them: it is read whole ("lazy": False).
py::dict ReadColumns(const std::string& path, bool strict, const std::vector<std::string>& kinds,
                     bool lazy) {
  TraceFile file(path, "");
  format::SbtReader& reader = file.reader();
  lazy = lazy && reader.report().indexed;
  LabelSet events{kinds.empty() && !lazy, kinds};
  std::vector<std::string> pending;
  if (lazy) {
    std::map<uint16_t, bool> has_chunks;
    for (const format::ChunkIndexEntry& c : reader.chunks())
      if (const char* label = EventLabelOf(c); label != nullptr && !events.Has(label))
        has_chunks[c.table_kind] = true;
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (Traits::kIsEvent && has_chunks[uint16_t(Traits::kKind)])
        pending.push_back(Traits::kLabel);
    });
  }
  const uint64_t identity = file.Identity();
  std::map<std::string, Columns> tables;
  std::vector<std::string> raw_strings;
  Status st;
  {
    py::gil_scoped_release release;
    st = StreamColumns(reader, events, true, &tables, &raw_strings);
  }
  if (!st.ok()) Raise(Status(st.code(), path + ": " + st.message()));
  file.CheckUnchanged();
  const format::ReadReport report =
      lazy ? DamageOf(reader, [&](const char* label) { return !label || events.Has(label); })
           : reader.report();
  if (strict && !report.clean()) Raise(report.DamageStatus(path));
  py::dict out, cols, rows;
  py::list labels;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    labels.append(Traits::kLabel);
    if (std::find(pending.begin(), pending.end(), Traits::kLabel) == pending.end())
      cols[Traits::kLabel] = tables[Traits::kLabel].template ToDict<T>();
  });
  std::map<std::string, uint64_t> claimed;
  for (const format::ChunkIndexEntry& c : reader.chunks())
    if (const char* label = EventLabelOf(c)) claimed[label] += c.rows;
  for (const auto& [label, n] : claimed) rows[py::str(label)] = n;
  out["tables"] = cols;
  out["kinds"] = labels;
  out["pending"] = pending;
  out["rows"] = rows;  // event rows per kind as the index lists them
  out["lazy"] = lazy && !pending.empty();
  out["identity"] = identity;
  // Strings are not validated UTF-8 in the format: bad bytes read as U+FFFD.
  py::list strings;
  for (const std::string& str : raw_strings)
    strings.append(py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(str.data(), py::ssize_t(str.size()), "replace")));
  out["strings"] = strings;
  out["damage"] = DamageList(report);
  out["damage_text"] = DamageText(path, report);
  out["version"] = py::make_tuple(report.major, report.minor);
  out["complete"] = report.indexed;
  return out;
}

// The rows of event kinds `kinds` of a trace read_columns(lazy=True) loaded
// earlier, in one pass: {"tables": {label: column dict}, "damage",
// "damage_text"} with the damage of those kinds' chunks only (strict: raised).
// The file must be the one loaded (`identity`); else TraceChangedError naming
// it as `what`, and nothing is returned: rows of another file would not match
// the strings and metadata already loaded.
py::dict ReadKinds(const std::string& path, const std::vector<std::string>& kinds, bool strict,
                   uint64_t identity, const std::string& what) {
  TraceFile file(path, what.empty() ? path : what);
  if (file.Identity() != identity)
    RaiseChanged((what.empty() ? path : what) +
                 " changed since tracesmith.load() read it: its other rows are not read from "
                 "the new contents (they would not match what was loaded); load it again");
  format::SbtReader& reader = file.reader();
  const LabelSet events{false, kinds};
  std::map<std::string, Columns> tables;
  Status st;
  {
    py::gil_scoped_release release;
    st = StreamColumns(reader, events, false, &tables, nullptr);
  }
  if (!st.ok()) Raise(Status(st.code(), path + ": " + st.message()));
  file.CheckUnchanged();
  const format::ReadReport report =
      DamageOf(reader, [&](const char* label) { return label && events.Has(label); });
  if (strict && !report.clean()) Raise(report.DamageStatus(path));
  py::dict out, cols;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    if (Traits::kIsEvent && events.Has(Traits::kLabel))
      cols[Traits::kLabel] = tables[Traits::kLabel].template ToDict<T>();
  });
  out["tables"] = cols;
  out["damage"] = DamageList(report);
  out["damage_text"] = DamageText(path, report);
  return out;
}

// (report JSON as bytes: its strings are the trace's, not validated UTF-8;
// damage text, empty when the file is clean)
// `files`: the run's per-process traces when `path` merges several (the
// cross-rank report is added as "ranks" when the trace holds a job).
py::tuple AnalyzeJson(const std::string& path, const std::string& from, const std::string& to,
                      const std::string& steps, bool whole, bool strict,
                      const std::vector<std::string>& files, bool with_warmup) {
  analysis::LoadOptions load;
  load.active_region = true;
  load.steady_state = !with_warmup;
  load.from = from;
  load.to = to;
  load.steps = steps;
  load.whole = whole;
  analysis::CompactTrace trace;
  format::ReadReport damage;
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    st = analysis::LoadCompactTrace(path, load, &trace, &damage);
    if (st.ok() && strict && !damage.clean()) st = damage.DamageStatus(path);
    if (st.ok()) {
      analysis::AnalysisReport report = analysis::BuildReport(trace, path, {});
      if (!steps.empty()) report.window_note = "steps " + steps + " of the Steps table";
      const std::vector<std::string> run = files.empty() ? std::vector<std::string>{path} : files;
      const auto job = analysis::JobReportOf(trace, run, {});
      analysis::WriteJsonReport(report, json, job ? &*job : nullptr);
    }
  }
  if (!st.ok()) Raise(st);
  return py::make_tuple(py::bytes(json.str()), DamageText(path, damage));
}

// `tracesmith memory --json` (analysis::BuildMemoryReport, the CLI's function).
py::tuple MemoryJson(const std::string& path, const std::string& at, size_t top, bool strict) {
  analysis::MemoryReportOptions o;
  o.at = at;
  o.top = top;
  analysis::MemoryReport report;
  format::ReadReport damage;
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    st = analysis::BuildMemoryReport(path, o, &report, &damage);
    if (st.ok() && strict && !damage.clean()) st = damage.DamageStatus(path);
    if (st.ok()) analysis::WriteMemoryJson(report, json);
  }
  if (!st.ok()) Raise(st);
  return py::make_tuple(py::bytes(json.str()), DamageText(path, damage));
}

// `tracesmith view --stats`: counts per kind and per (kind, name), streamed
// (analysis::StreamEventStats, the CLI's function).
py::dict EventStats(const std::string& path, const std::vector<std::string>& kinds,
                    const std::string& name, int64_t stream, int64_t device,
                    const std::string& from, const std::string& to, bool strict) {
  analysis::EventFilterSpec spec{kinds, name, stream, device, from, to};
  auto filter = Check(analysis::EventFilter::Make(spec));
  auto reader = Check(format::SbtReader::Open(path));
  StatusOr<analysis::EventStats> stats = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    stats = analysis::StreamEventStats(*reader, std::move(filter));
  }
  if (!stats.ok()) {
    const Status& st = stats.status();
    Raise(st.code() == StatusCode::kInvalidArgument
              ? st
              : Status(st.code(), path + ": " + st.message()));
  }
  const format::ReadReport& report = reader->report();
  if (strict && !report.clean()) Raise(report.DamageStatus(path));
  py::dict out, per_kind;
  for (const auto& [kind, n] : stats->per_kind) per_kind[py::str(kind)] = n;
  py::list per_name;
  for (const analysis::NameStats& a : stats->per_name) {
    py::dict row;
    row["kind"] = a.kind;
    row["name"] = py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(a.name.data(), py::ssize_t(a.name.size()), "replace"));
    row["count"] = a.count;
    row["timed"] = a.timed;
    row["total_ns"] = a.total_ns;
    row["mean_ns"] = a.mean_ns();
    row["min_ns"] = a.timed ? py::object(py::int_(a.min_ns)) : py::object(py::none());
    row["max_ns"] = a.timed ? py::object(py::int_(a.max_ns)) : py::object(py::none());
    per_name.append(row);
  }
  out["matched"] = stats->matched;
  out["per_kind"] = per_kind;
  out["per_name"] = per_name;
  out["damage_text"] =
      report.clean() ? std::string() : report.Headline(path) + ":\n" + report.Describe();
  return out;
}

// `tracesmith profile -- COMMAND` without the printing: capture::RunUnderCapture
// with options given as the injection library's environment variables.
py::dict RunCommand(const std::vector<std::string>& command,
                    const std::map<std::string, std::string>& options, const std::string& inject) {
  capture::RunOptions run;
  run.command = command;
  run.capture = Check(capture::OptionsFromEnv(options));
  run.inject_library = inject;
  StatusOr<capture::RunResult> r = InvalidArgument("not run");
  {
    py::gil_scoped_release release;  // the command may run for hours
    r = capture::RunUnderCapture(run);
  }
  if (!r.ok()) Raise(r.status());
  py::dict out;
  out["exit_code"] = r->exit_code;
  out["signal"] = r->term_signal;
  out["seconds"] = r->seconds;
  out["output"] = r->output;
  out["files"] = r->files;
  out["kept_previous"] = r->kept_previous;
  out["previous_trace_error"] = r->previous_trace.ok() ? "" : r->previous_trace.message();
  return out;
}

// `tracesmith diff --json A B`: the JSON (bytes), as the CLI writes it.
py::bytes DiffJson(const std::string& a, const std::string& b, const std::string& nvtx,
                   bool strict) {
  analysis::LoadOptions load;
  load.nvtx = nvtx;
  std::ostringstream json;
  Status st;
  {
    py::gil_scoped_release release;
    auto d = analysis::DiffTraceFiles(a, b, load, strict);
    if (d.ok()) analysis::WriteJsonDiff(*d, json);
    st = d.status();
  }
  if (!st.ok()) Raise(st);
  return py::bytes(json.str());
}

py::dict Export(const std::string& path, const std::string& out, const std::string& format,
                bool gzip, bool strict, size_t node_limit, const std::string& from,
                const std::string& to) {
  auto fmt = Check(exporter::ParseExportFormat(format));
  exporter::ExportOptions options;
  options.gzip = gzip;
  options.refuse_damaged_input = strict;
  options.dot_node_limit = node_limit;
  options.from = from;
  options.to = to;
  format::ReadReport damage;
  StatusOr<exporter::ExportStats> stats = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    stats = exporter::ExportSbtFile(path, fmt, out, options, &damage);
  }
  if (!stats.ok()) Raise(stats.status());
  py::dict d;
  d["path"] = out;
  d["format"] = exporter::ExportFormatName(fmt);
  d["events"] = stats->events;
  d["bytes"] = stats->bytes;
  d["flows"] = stats->flows;
  d["damage_text"] = DamageText(path, damage);
  return d;
}

py::dict Import(const std::string& path, const std::string& out, const std::string& xray_binary,
                bool strict) {
  importer::ImportOptions io;
  io.xray_binary = xray_binary;
  importer::ImportFormat detected;
  importer::ImportStats stats;
  Status st;
  {
    py::gil_scoped_release release;
    auto trace = importer::ImportFile(path, io, &detected, &stats);
    if (!trace.ok()) {
      st = trace.status();
    } else if (strict && !stats.damage.empty()) {
      st = DataLoss(path + ": " + stats.damage);
    } else {
      st = format::WriteTraceFile(*trace, out);
    }
  }
  if (!st.ok()) Raise(st);
  py::dict d;
  d["path"] = out;
  d["format"] = importer::ImportFormatName(detected);
  d["events"] = stats.events;
  d["skipped"] = stats.skipped;
  d["damage_text"] = stats.damage;
  d["warnings"] = stats.warnings;
  return d;
}

// cluster::ResolveRun: {"files": [...], "expanded": [...]}.
py::dict ResolveRun(const std::vector<std::string>& names, bool single) {
  cluster::RunFiles run = Check(cluster::ResolveRun(names, single));
  py::dict d;
  d["files"] = run.files;
  d["expanded"] = run.expanded;
  return d;
}

// cluster::MergeTraces, and what it did as a dict (the CLI's summary line
// in "summary", its notes and each input's damage as text).
py::dict Merge(const std::vector<std::string>& inputs, const std::string& out, bool strict,
               bool overwrite, bool in_place) {
  cluster::MergeOptions o;
  o.strict = strict;
  o.overwrite = overwrite;
  o.in_place = in_place;
  StatusOr<cluster::MergeResult> merged = InvalidArgument("not run");
  {
    py::gil_scoped_release release;
    merged = cluster::MergeTraces(inputs, out, o);
  }
  if (!merged.ok()) Raise(merged.status());
  py::list ins;
  for (const cluster::MergedInput& in : merged->inputs) {
    py::list procs;
    for (const cluster::MergedProcess& p : in.processes) {
      py::dict x;
      x["pid"] = p.pid;
      x["out_pid"] = p.out_pid;
      x["rank"] = p.rank;
      x["host"] = p.host;
      x["name"] = p.name;
      procs.append(x);
    }
    py::dict i;
    i["path"] = in.path;
    i["bytes"] = in.bytes;
    i["events"] = in.events;
    i["events_by_kind"] = in.events_by_kind;
    i["processes"] = procs;
    i["damage_text"] = DamageText(in.path, in.damage);
    i["replay_chunks"] = in.replay_chunks;
    ins.append(i);
  }
  py::dict d;
  d["path"] = out;
  d["inputs"] = ins;
  d["events"] = merged->events;
  d["input_bytes"] = merged->input_bytes;
  d["output_bytes"] = merged->output_bytes;
  d["notes"] = merged->notes;
  d["summary"] = merged->Describe();
  return d;
}

py::dict Devices() {
  auto info = capture::QueryDevices();
  py::dict d;
  py::list devices;
  if (info.ok()) {
    d["driver_version"] = info->driver_version;
    for (const capture::DeviceInfo& dev : info->devices) {
      py::dict x;
      x["ordinal"] = dev.ordinal;
      x["name"] = dev.name;
      x["uuid"] = dev.uuid;
      x["compute_capability"] = py::make_tuple(dev.cc_major, dev.cc_minor);
      x["sm_count"] = dev.sm_count;
      x["memory_bytes"] = dev.memory_bytes;
      devices.append(x);
    }
  } else {
    d["driver_version"] = 0;
    d["error"] = info.status().message();
  }
  d["devices"] = devices;
  return d;
}

}  // namespace
}  // namespace tracesmith::python

PYBIND11_MODULE(_core, m) {
  using namespace tracesmith::python;
  m.doc() = "TraceSmith's C++ libraries (use the tracesmith package, not this module)";
  // The package's own exception class (python/tracesmith/_errors.py), kept alive here.
  py::object trace_error = py::module_::import("tracesmith._errors").attr("TraceError");
  g_trace_error = trace_error.release().ptr();
  m.attr("TraceError") = py::handle(g_trace_error);
  py::object trace_changed = py::module_::import("tracesmith._errors").attr("TraceChangedError");
  g_trace_changed = trace_changed.release().ptr();
  m.attr("version") = TS_VERSION;
  m.attr("sbt_version") =
      py::make_tuple(tracesmith::format::kMajorVersion, tracesmith::format::kMinorVersion);
  m.def("read_columns", &ReadColumns, py::arg("path"), py::arg("strict") = false,
        py::arg("kinds") = std::vector<std::string>(), py::arg("lazy") = false,
        "Record kinds' rows of an SBT file as {kind: {field: ndarray}}, plus strings and damage "
        "(lazy: metadata and `kinds` only; the other event kinds are left \"pending\")");
  m.def("read_kinds", &ReadKinds, py::arg("path"), py::arg("kinds"), py::arg("strict"),
        py::arg("identity"), py::arg("what") = "",
        "Event kinds left pending by read_columns(lazy=True), in one pass over the same file "
        "(TraceChangedError when it is not)");
  m.def("analyze_json", &AnalyzeJson, py::arg("path"), py::arg("start") = "", py::arg("end") = "",
        py::arg("steps") = "", py::arg("whole") = false, py::arg("strict") = false,
        py::arg("files") = std::vector<std::string>{}, py::arg("with_warmup") = false,
        "`tracesmith analyze --json` of an SBT file (`files`: the run's per-process traces when "
        "it merges several; the cross-rank report is then its \"ranks\")");
  m.def("memory_json", &MemoryJson, py::arg("path"), py::arg("at") = "", py::arg("top") = 10,
        py::arg("strict") = false, "`tracesmith memory --json` of an SBT file");
  m.def("diff_json", &DiffJson, py::arg("a"), py::arg("b"), py::arg("nvtx") = "",
        py::arg("strict") = false, "`tracesmith diff --json A B`");
  m.def("export", &Export, py::arg("path"), py::arg("out"), py::arg("format"),
        py::arg("gzip") = false, py::arg("strict") = false, py::arg("node_limit") = 500,
        py::arg("start") = "", py::arg("end") = "", "`tracesmith export`");
  m.def("import_trace", &Import, py::arg("path"), py::arg("out"), py::arg("xray_binary") = "",
        py::arg("strict") = false, "`tracesmith import`");
  m.def("event_stats", &EventStats, py::arg("path"), py::arg("kinds"), py::arg("name"),
        py::arg("stream"), py::arg("device"), py::arg("start"), py::arg("end"),
        py::arg("strict") = false, "`tracesmith view --stats` as a dict");
  m.def("run_command", &RunCommand, py::arg("command"), py::arg("options"), py::arg("inject"),
        "Runs a command under capture (capture::RunUnderCapture) and waits for it");
  m.def("devices", &Devices, "CUDA driver version and devices (empty without a driver or GPU)");
  m.def("resolve_run", &ResolveRun, py::arg("names"), py::arg("single") = false,
        "The trace files a run's names stand for (cluster::ResolveRun)");
  m.def("merge", &Merge, py::arg("inputs"), py::arg("out"), py::arg("strict") = false,
        py::arg("overwrite") = false, py::arg("in_place") = false,
        "`tracesmith merge`: the traces in one file (cluster::MergeTraces)");
  m.def(
      "check_output",
      [](const std::string& out, const std::vector<std::string>& inputs, bool overwrite,
         const std::string& how_to_overwrite) {
        tracesmith::Status st =
            tracesmith::CheckOutputFile(out, inputs, overwrite, how_to_overwrite);
        if (!st.ok()) Raise(st);
      },
      py::arg("out"), py::arg("inputs"), py::arg("overwrite"), py::arg("how_to_overwrite"),
      "The CLI's output rule (base/atomic_file.h CheckOutputFile): raises TraceError when `out` "
      "is an input, a directory or a device, or exists without overwrite");
  m.def(
      "write_tables",
      [](const std::string& path, const py::dict& tables, const std::vector<std::string>& strings) {
        tracesmith::Status st = WriteTables(path, tables, strings);
        if (!st.ok()) Raise(st);
      },
      py::arg("path"), py::arg("tables"), py::arg("strings"),
      "Writes {kind: [{field: array}, ...]} rows and the string table as an SBT file "
      "(atomically)");
  m.def(
      "enum_names",
      [] {
        py::dict out;
        for (const tracesmith::model::EnumField& f : tracesmith::model::EnumFields()) {
          py::str label(tracesmith::model::TableKindLabel(f.table));
          if (!out.contains(label)) out[label] = py::dict();
          py::list names;
          for (const char* n : f.names) names.append(n);
          out[label].cast<py::dict>()[py::str(f.field)] = names;
        }
        return out;
      },
      "{kind: {field: [name of value 0, 1, ...]}} of the enumeration fields (model/enum_fields.h)");
}
