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

// Calls fn.template operator()<V>() with V the type whose bits a field of
// type `t` holds: int32_t for kI32 (so that it widens with its sign),
// uint64_t for the 64-bit types (doubles travel as their bits). The one
// place that maps a field type to its width.
template <typename Fn>
constexpr decltype(auto) VisitFieldBits(FieldType t, Fn&& fn) {
  switch (t) {
    case FieldType::kU8:
      return fn.template operator()<uint8_t>();
    case FieldType::kU16:
      return fn.template operator()<uint16_t>();
    case FieldType::kU32:
      return fn.template operator()<uint32_t>();
    case FieldType::kI32:
      return fn.template operator()<int32_t>();
    case FieldType::kU64:
    case FieldType::kI64:
    case FieldType::kF64:
      break;
  }
  return fn.template operator()<uint64_t>();
}

// A field's bits as 64: signed types sign-extend. The way back is a
// static_cast<V>, which keeps the low bits.
template <typename V>
constexpr uint64_t WidenFieldBits(V v) {
  if constexpr (std::is_signed_v<V>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return v;
}

// Reads a field as 64 bits (signed types sign-extend; doubles are bit-cast).
uint64_t LoadField(const void* record, const FieldDesc& f);
void StoreField(void* record, const FieldDesc& f, uint64_t bits);

}  // namespace tracesmith::model
