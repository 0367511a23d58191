#include "tracesmith/model/records.h"

namespace tracesmith::model {

const char* TableKindLabel(TableKind kind) {
  const char* label = nullptr;
  ForEachRecordType([&]<typename T>() {
    if (RecordTraits<T>::kKind == kind) label = RecordTraits<T>::kLabel;
  });
  return label;
}

bool IsKnownTableKind(uint16_t kind) {
  return TableKindLabel(static_cast<TableKind>(kind)) != nullptr;
}

// CopyKindName, MemoryKindName, SyncTypeName: enum_fields.cc.

}  // namespace tracesmith::model
