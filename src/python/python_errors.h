// How tracesmith._core's functions fail in Python: tracesmith.TraceError with a Status's
// message (file, byte offset), tracesmith.TraceChangedError when a trace changed under a
// pass, and the damage text the CLI prints. The exception classes are looked up once, by
// PYBIND11_MODULE (core_module.cc).
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::python {

inline PyObject* g_trace_error = nullptr;    // tracesmith.TraceError (python/tracesmith/_errors.py)
inline PyObject* g_trace_changed = nullptr;  // tracesmith.TraceChangedError (a TraceError)

[[noreturn]] inline void Raise(const Status& st) {
  PyErr_SetString(g_trace_error, st.message().c_str());
  throw pybind11::error_already_set();
}

template <typename T>
T Check(StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return std::move(v).value();
}

[[noreturn]] inline void RaiseChanged(const std::string& message) {
  PyErr_SetString(g_trace_changed, message.c_str());
  throw pybind11::error_already_set();
}

// What the CLI prints about a damaged file (its headline and byte ranges);
// empty when the file is clean.
inline std::string DamageText(const std::string& path, const format::ReadReport& damage) {
  return damage.clean() ? std::string() : damage.Headline(path) + ":\n" + damage.Describe();
}

}  // namespace tracesmith::python
