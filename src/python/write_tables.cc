#include "write_tables.h"

#include <pybind11/numpy.h>

#include <cstring>

#include "field_dtype.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/records.h"
#include "tracesmith/model/trace.h"

namespace py = pybind11;

namespace tracesmith::python {
namespace {

template <typename T>
Status AddRows(const std::string& label, const py::dict& columns, model::Trace* trace) {
  using Traits = model::RecordTraits<T>;
  py::module_ np = py::module_::import("numpy");
  // Every named column must be a field of the kind, all of one length.
  py::ssize_t rows = -1;
  for (auto item : columns) {
    const std::string field = py::str(item.first);
    bool known = false;
    for (size_t f = 0; f < Traits::kNumFields; ++f) known |= field == Traits::kAllFields[f].name;
    if (!known) return InvalidArgument(label + " rows have no field '" + field + "'");
    const py::ssize_t n = py::len(item.second);
    if (rows >= 0 && n != rows)
      return InvalidArgument(label + "." + field + ": " + std::to_string(n) +
                             " values, other fields have " + std::to_string(rows));
    rows = n;
  }
  if (rows <= 0) return OkStatus();
  std::vector<T>& out = trace->Rows<T>();
  const size_t first = out.size();
  out.resize(first + size_t(rows));
  for (size_t f = 0; f < Traits::kNumFields; ++f) {
    const model::FieldDesc& d = Traits::kAllFields[f];
    if (!columns.contains(d.name)) continue;
    py::array a;
    try {
      // (casting as NumPy does: values that do not fit wrap, as in C)
      a = np.attr("ascontiguousarray")(
          np.attr("asarray")(columns[d.name]).attr("astype")(FieldDtype(d.type)));
    } catch (const py::error_already_set& e) {
      return InvalidArgument(label + "." + d.name + ": not numbers of type " + FieldDtype(d.type) +
                             " (" + e.what() + ")");
    }
    const size_t w = size_t(a.itemsize());
    const auto* src = static_cast<const uint8_t*>(a.data());
    for (py::ssize_t r = 0; r < rows; ++r)
      std::memcpy(reinterpret_cast<uint8_t*>(&out[first + size_t(r)]) + d.offset,
                  src + size_t(r) * w, w);
  }
  return OkStatus();
}

}  // namespace

Status WriteTables(const std::string& path, const py::dict& tables,
                   const std::vector<std::string>& strings) {
  model::Trace trace;
  for (size_t i = 0; i < strings.size(); ++i)
    if (trace.strings.Intern(strings[i]) != i)
      return InvalidArgument("strings: '" + strings[i] + "' at " + std::to_string(i) +
                             " repeats an earlier string (or the first is not \"\")");
  for (auto item : tables) {
    const std::string label = py::str(item.first);
    bool known = false;
    Status st;
    model::ForEachRecordType([&]<typename T>() {
      if (known || label != model::RecordTraits<T>::kLabel) return;
      known = true;
      // Each part is cast to the fields' types on its own (parts of
      // different dtypes never meet in a common, lossy one).
      for (py::handle part : item.second.cast<py::list>()) {
        st = AddRows<T>(label, part.cast<py::dict>(), &trace);
        if (!st.ok()) return;
      }
    });
    if (!known) return InvalidArgument("no record kind '" + label + "'");
    if (!st.ok()) return st;
  }
  return format::WriteTraceFile(trace, path);
}

}  // namespace tracesmith::python
