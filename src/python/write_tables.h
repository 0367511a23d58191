// tracesmith.SBTWriter's native half: rows given as NumPy columns, written
// as an SBT trace by the format library's writer (the real format, atomic).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "tracesmith/base/status.h"

namespace tracesmith::python {

// `tables`: {label: {field: array}} (all arrays of a label one length; a
// field left out is 0 in every row); `strings`: the string table, ids in
// order ("" first, no repeats). Errors name the label and field.
Status WriteTables(const std::string& path, const pybind11::dict& tables,
                   const std::vector<std::string>& strings);

}  // namespace tracesmith::python
