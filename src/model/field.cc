#include "tracesmith/model/field.h"

#include <cstring>

namespace tracesmith::model {

uint64_t LoadField(const void* record, const FieldDesc& f) {
  const auto* p = static_cast<const uint8_t*>(record) + f.offset;
  return VisitFieldBits(f.type, [p]<typename V>() {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return WidenFieldBits(v);
  });
}

void StoreField(void* record, const FieldDesc& f, uint64_t bits) {
  auto* p = static_cast<uint8_t*>(record) + f.offset;
  VisitFieldBits(f.type, [p, bits]<typename V>() {
    auto v = static_cast<V>(bits);
    std::memcpy(p, &v, sizeof(V));
  });
}

}  // namespace tracesmith::model
