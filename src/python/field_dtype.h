// The NumPy dtype of each record field type, shared by reading (core_module.cc)
// and writing (write_tables.cc) columns.
#pragma once

#include "tracesmith/model/field.h"

namespace tracesmith::python {

inline const char* FieldDtype(model::FieldType t) {
  switch (t) {
    case model::FieldType::kU8:
      return "u1";
    case model::FieldType::kU16:
      return "u2";
    case model::FieldType::kU32:
      return "u4";
    case model::FieldType::kU64:
      return "u8";
    case model::FieldType::kI32:
      return "i4";
    case model::FieldType::kI64:
      return "i8";
    case model::FieldType::kF64:
      return "f8";
  }
  return "u8";
}

}  // namespace tracesmith::python
