// Field descriptors: the reflection that lets one columnar codec, one
// round-trip test and one printer serve every record kind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace tracesmith::model {

enum class FieldType : uint8_t { kU8, kU16, kU32, kU64, kI32, kI64, kF64 };

// How a field is stored in an SBT table chunk (docs/sbt-format.md, "Columns").
enum class FieldRole : uint8_t {
  kTime,      // column: zigzag delta from the previous row (the row's primary timestamp)
  kRelStart,  // column: 0 when the value is 0 (unknown), else zigzag(value - start_ns) + 1
  kDelta,     // column: zigzag delta from the previous row
  kRaw,       // column: 8 raw little-endian bytes per row (doubles, hashes)
  kConfig,    // per-chunk dictionary entry shared by rows with equal config fields
};

struct FieldDesc {
  const char* name;
  uint16_t offset;
  FieldType type;
  FieldRole role;
};

template <typename T>
constexpr FieldType FieldTypeOf() {
  if constexpr (std::is_same_v<T, uint8_t>) return FieldType::kU8;
  if constexpr (std::is_same_v<T, uint16_t>) return FieldType::kU16;
  if constexpr (std::is_same_v<T, uint32_t>) return FieldType::kU32;
  if constexpr (std::is_same_v<T, uint64_t>) return FieldType::kU64;
  if constexpr (std::is_same_v<T, int32_t>) return FieldType::kI32;
  if constexpr (std::is_same_v<T, int64_t>) return FieldType::kI64;
  if constexpr (std::is_same_v<T, double>) return FieldType::kF64;
}

// Reads a field as 64 bits (signed types sign-extend; doubles are bit-cast).
uint64_t LoadField(const void* record, const FieldDesc& f);
void StoreField(void* record, const FieldDesc& f, uint64_t bits);

}  // namespace tracesmith::model
