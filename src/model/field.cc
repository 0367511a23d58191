#include "tracesmith/model/field.h"

#include <cstring>

namespace tracesmith::model {

uint64_t LoadField(const void* record, const FieldDesc& f) {
  const auto* p = static_cast<const uint8_t*>(record) + f.offset;
  switch (f.type) {
    case FieldType::kU8:
      return *p;
    case FieldType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case FieldType::kU32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case FieldType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<uint64_t>(int64_t{v});
    }
    case FieldType::kU64:
    case FieldType::kI64:
    case FieldType::kF64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return 0;
}

void StoreField(void* record, const FieldDesc& f, uint64_t bits) {
  auto* p = static_cast<uint8_t*>(record) + f.offset;
  switch (f.type) {
    case FieldType::kU8:
      *p = static_cast<uint8_t>(bits);
      return;
    case FieldType::kU16: {
      auto v = static_cast<uint16_t>(bits);
      std::memcpy(p, &v, 2);
      return;
    }
    case FieldType::kU32:
    case FieldType::kI32: {
      auto v = static_cast<uint32_t>(bits);
      std::memcpy(p, &v, 4);
      return;
    }
    case FieldType::kU64:
    case FieldType::kI64:
    case FieldType::kF64:
      std::memcpy(p, &bits, 8);
      return;
  }
}

}  // namespace tracesmith::model
