// The record fields whose values are enumerations (copy kinds, memory kinds,
// sync types, ...), with the name of each value: one list for every reader
// that shows names instead of numbers (the Python package's `*_name`
// columns; the CLI's event names use the same functions).
#pragma once

#include <span>
#include <string_view>

#include "tracesmith/model/records.h"

namespace tracesmith::model {

struct EnumField {
  TableKind table;
  const char* field;                   // the field's name in RecordTraits
  std::span<const char* const> names;  // indexed by value; others are "unknown"
};

// Every enumeration field, in table order.
std::span<const EnumField> EnumFields();

// The name of `value` of `field` in `table`, or nullptr when that field is
// not an enumeration; "unknown" for a value without a name.
const char* EnumValueName(TableKind table, std::string_view field, uint64_t value);

}  // namespace tracesmith::model
