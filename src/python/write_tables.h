// tracesmith.SBTWriter's native half: rows given as NumPy columns, written
// as an SBT trace by the format library's writer (the real format, atomic).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::python {

// `tables`: {label: [part, ...]}, each part {field: array} (the arrays of
// a part of one length; a field a part leaves out is 0 in its rows), the
// parts' rows appended in order; `strings`: the string table, ids in order
// ("" first, no repeats). Errors name the label and field.
Status WriteTables(const std::string& path, const pybind11::dict& tables,
                   const std::vector<std::string>& strings);

}  // namespace tracesmith::python
