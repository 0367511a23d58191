// tracesmith._core's read_columns and read_kinds (tracesmith.load): traces are read chunk by
// chunk (SbtReader::Stream) into one growing column per field of each record kind, handed to
// NumPy without a copy: memory is the columns, never a Python object per event.
#include "read_columns.h"

#include <pybind11/numpy.h>
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
#include <string>
#include <unordered_map>
#include <vector>

#include "column_buffer.h"
#include "field_dtype.h"
#include "python_errors.h"
#include "tracesmith/cluster/run_source.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/enum_fields.h"
#include "tracesmith/model/records.h"

namespace py = pybind11;

namespace tracesmith::python {
namespace {

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
Status StreamColumns(format::TraceSource& source, const LabelSet& events, bool metadata,
                     std::map<std::string, Columns>* tables, std::vector<std::string>* strings) {
  {
    std::map<uint16_t, uint64_t> claimed;
    for (const format::ChunkIndexEntry& c : source.TableChunks()) claimed[c.table_kind] += c.rows;
    uint64_t budget = 64 * source.bytes();
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
  return source.Stream(add_rows, at_end, want_kind);
}

// The same pass over one file's reader.
Status StreamColumns(format::SbtReader& reader, const LabelSet& events, bool metadata,
                     std::map<std::string, Columns>* tables, std::vector<std::string>* strings) {
  std::unique_ptr<format::TraceSource> source = format::ReaderSource(reader, "");
  return StreamColumns(*source, events, metadata, tables, strings);
}

py::list DamageList(const format::ReadReport& report) {
  py::list damage;
  for (const format::Damage& d : report.damage)
    damage.append(py::make_tuple(d.offset, d.length, d.what));
  return damage;
}

// A run's identity: its files' (SbtReader::ContentIdentity), in order. A run
// loaded lazily reads its other kinds later only from the files it loaded.
uint64_t RunIdentity(const std::vector<std::string>& files, const std::string& what) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const std::string& path : files) {
    StatusOr<std::unique_ptr<format::SbtReader>> r = format::SbtReader::Open(path);
    if (!r.ok())
      RaiseChanged(what + ": " + path + " cannot be read again since tracesmith.load() read it (" +
                   r.status().message() + "); load it again");
    h = (h ^ (*r)->ContentIdentity()) * 0x100000001b3ull;
  }
  return h;
}

void CheckRunUnchanged(const cluster::RunSource& run, uint64_t identity, const std::string& what) {
  if (RunIdentity(run.files(), what) != identity)
    RaiseChanged(what +
                 " was written to while it was being read; nothing of it is kept, load it again");
}

// ReadKinds' tables: the event kinds of `events`, as columns.
py::dict KindTables(std::map<std::string, Columns>& tables, const LabelSet& events) {
  py::dict cols;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    if (Traits::kIsEvent && events.Has(Traits::kLabel))
      cols[Traits::kLabel] = tables[Traits::kLabel].template ToDict<T>();
  });
  return cols;
}

// ReadColumns' document but its damage, version and completeness (a file's
// or a run's): the tables read, the kinds left pending, the event rows per
// kind as the index lists them, the strings.
py::dict ColumnsDocument(std::map<std::string, Columns>& tables,
                         const std::vector<std::string>& pending,
                         const std::map<std::string, uint64_t>& claimed,
                         const std::vector<std::string>& raw_strings, bool lazy,
                         uint64_t identity) {
  py::dict out, cols, rows;
  py::list labels;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    labels.append(Traits::kLabel);
    if (std::find(pending.begin(), pending.end(), Traits::kLabel) == pending.end())
      cols[Traits::kLabel] = tables[Traits::kLabel].template ToDict<T>();
  });
  for (const auto& [label, n] : claimed) rows[py::str(label)] = n;
  out["tables"] = cols;
  out["kinds"] = labels;
  out["pending"] = pending;
  out["rows"] = rows;
  out["lazy"] = lazy && !pending.empty();
  out["identity"] = identity;
  // Strings are not validated UTF-8 in the format: bad bytes read as U+FFFD.
  py::list strings;
  for (const std::string& str : raw_strings)
    strings.append(py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(str.data(), py::ssize_t(str.size()), "replace")));
  out["strings"] = strings;
  return out;
}

}  // namespace

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
  std::map<std::string, uint64_t> claimed;
  for (const format::ChunkIndexEntry& c : reader.chunks())
    if (const char* label = EventLabelOf(c)) claimed[label] += c.rows;
  py::dict out = ColumnsDocument(tables, pending, claimed, raw_strings, lazy, identity);
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
  py::dict out;
  out["tables"] = KindTables(tables, events);
  out["damage"] = DamageList(report);
  out["damage_text"] = DamageText(path, report);
  return out;
}

// ReadColumns over a run merged on the fly (cluster::RunSource: no temporary
// file): the columns a file merged from it (MergeTraces) gives. Lazy when
// every input has its index. Its inputs' damage is the run's (its result():
// the caller warns it), so "damage" is empty here.
py::dict ReadRunColumns(cluster::RunSource& run, const std::string& what, bool strict,
                        const std::vector<std::string>& kinds, bool lazy) {
  (void)strict;  // a strict run was opened strict: a damaged input is its error
  const std::vector<format::ChunkIndexEntry> chunks = run.TableChunks();
  lazy = lazy && std::none_of(chunks.begin(), chunks.end(),
                              [](const format::ChunkIndexEntry& c) { return c.table_kind == 0; });
  LabelSet events{kinds.empty() && !lazy, kinds};
  std::vector<std::string> pending;
  std::map<std::string, uint64_t> claimed;
  for (const format::ChunkIndexEntry& c : chunks)
    if (const char* label = EventLabelOf(c)) claimed[label] += c.rows;
  if (lazy)
    model::ForEachRecordType([&]<typename T>() {
      using Traits = model::RecordTraits<T>;
      if (Traits::kIsEvent && claimed.contains(Traits::kLabel) && !events.Has(Traits::kLabel))
        pending.push_back(Traits::kLabel);
    });
  const uint64_t identity = RunIdentity(run.files(), what);
  std::map<std::string, Columns> tables;
  std::vector<std::string> raw_strings;
  Status st;
  {
    py::gil_scoped_release release;
    st = StreamColumns(run, events, true, &tables, &raw_strings);
  }
  if (!st.ok()) Raise(st);
  CheckRunUnchanged(run, identity, what);
  py::dict out = ColumnsDocument(tables, pending, claimed, raw_strings, lazy, identity);
  // The inputs' damage, each range named by its file (what the caller warns
  // of is the run's whole result); complete: every input's writer closed it.
  py::list damage;
  std::string damage_text;
  bool complete = true;
  for (const cluster::MergedInput& in : run.result().inputs) {
    complete = complete && in.damage.indexed;
    for (const format::Damage& d : in.damage.damage)
      damage.append(py::make_tuple(d.offset, d.length, in.path + ": " + d.what));
    if (!in.damage.clean())
      damage_text += (damage_text.empty() ? "" : "\n") + DamageText(in.path, in.damage);
  }
  out["damage"] = damage;
  out["damage_text"] = damage_text;
  out["version"] = py::make_tuple(format::kMajorVersion, format::kMinorVersion);
  out["complete"] = complete;
  return out;
}

// ReadKinds over the run ReadRunColumns loaded (`identity`: its files unchanged).
py::dict ReadRunKinds(cluster::RunSource& run, const std::vector<std::string>& kinds,
                      uint64_t identity, const std::string& what) {
  if (RunIdentity(run.files(), what) != identity)
    RaiseChanged(what +
                 " changed since tracesmith.load() read it: its other rows are not read from "
                 "the new contents (they would not match what was loaded); load it again");
  const LabelSet events{false, kinds};
  std::map<std::string, Columns> tables;
  Status st;
  {
    py::gil_scoped_release release;
    st = StreamColumns(run, events, false, &tables, nullptr);
  }
  if (!st.ok()) Raise(st);
  CheckRunUnchanged(run, identity, what);
  py::dict out;
  out["tables"] = KindTables(tables, events);
  out["damage"] = py::list();
  out["damage_text"] = "";
  return out;
}

}  // namespace tracesmith::python
