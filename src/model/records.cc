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

const char* CopyKindName(uint8_t kind) {
  static const char* const kNames[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                       "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < sizeof(kNames) / sizeof(kNames[0]) ? kNames[kind] : "unknown";
}

const char* MemoryKindName(uint8_t kind) {
  static const char* const kNames[] = {"unknown", "pageable", "pinned",         "device",
                                       "array",   "managed",  "device_static", "managed_static"};
  return kind < sizeof(kNames) / sizeof(kNames[0]) ? kNames[kind] : "unknown";
}

const char* SyncTypeName(uint8_t type) {
  static const char* const kNames[] = {"unknown", "event_synchronize", "stream_wait_event",
                                       "stream_synchronize", "context_synchronize"};
  return type < sizeof(kNames) / sizeof(kNames[0]) ? kNames[type] : "unknown";
}

}  // namespace tracesmith::model
