// Macro machinery behind TS_DEFINE_RECORD (records.h). Each record kind is
// written once as an X-macro field list; these macros turn that list into the
// struct, its config key (the fields with role kConfig), and its descriptors.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tracesmith/model/field.h"

namespace tracesmith::model {

template <typename Record>
struct RecordTraits;  // specialised by TS_DEFINE_RECORD

inline uint64_t HashMix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// One cheap step per config field (rotate + xor); HashFinish avalanches once.
// The encoder hashes every row's config, so this is on the write hot path.
inline uint64_t HashStep(uint64_t h, uint64_t v) { return ((h << 13) | (h >> 51)) ^ v; }
inline uint64_t HashFinish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

// A field's value as the 64 bits the codec works on (signed types
// sign-extend, doubles are bit-cast), and back.
template <typename V>
inline uint64_t ToBits(V v) {
  if constexpr (std::is_same_v<V, double>)
    return std::bit_cast<uint64_t>(v);
  else if constexpr (std::is_signed_v<V>)
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  else
    return static_cast<uint64_t>(v);
}
template <typename V>
inline V FromBits(uint64_t bits) {
  if constexpr (std::is_same_v<V, double>)
    return std::bit_cast<double>(bits);
  else
    return static_cast<V>(bits);
}

}  // namespace tracesmith::model

// Role dispatch: expands its arguments only for config fields.
#define TS_CFG_kConfig(...) __VA_ARGS__
#define TS_CFG_kTime(...)
#define TS_CFG_kRelStart(...)
#define TS_CFG_kDelta(...)
#define TS_CFG_kRaw(...)

// ... and only for column (non-config) fields.
#define TS_DATA_kConfig(...)
#define TS_DATA_kTime(...) __VA_ARGS__
#define TS_DATA_kRelStart(...) __VA_ARGS__
#define TS_DATA_kDelta(...) __VA_ARGS__
#define TS_DATA_kRaw(...) __VA_ARGS__

#define TS_MEMBER(type, name, role) type name = 0;
#define TS_GATHER_DATA(type, name, role) \
  TS_DATA_##role(cols[j++][i] = ::tracesmith::model::ToBits(name);)
#define TS_SCATTER_DATA(type, name, role) \
  TS_DATA_##role(name = ::tracesmith::model::FromBits<type>(cols[j++][i]);)
#define TS_CONFIG_MEMBER(type, name, role) TS_CFG_##role(type name = 0;)
#define TS_CONFIG_GET(type, name, role) TS_CFG_##role(k.name = r.name;)
#define TS_CONFIG_SET(type, name, role) TS_CFG_##role(r.name = k.name;)
#define TS_CONFIG_HASH(type, name, role) \
  TS_CFG_##role(h = ::tracesmith::model::HashStep(h, static_cast<uint64_t>(k.name));)
#define TS_FIELD_DESC(type, name, role)                                           \
  ::tracesmith::model::FieldDesc{#name, static_cast<uint16_t>(offsetof(R, name)), \
                                 ::tracesmith::model::FieldTypeOf<type>(),        \
                                 ::tracesmith::model::FieldRole::role},
#define TS_CONFIG_DESC(type, name, role)                                                         \
  TS_CFG_##role(                                                                                 \
      ::tracesmith::model::FieldDesc{#name, static_cast<uint16_t>(offsetof(R::ConfigKey, name)), \
                                     ::tracesmith::model::FieldTypeOf<type>(),                   \
                                     ::tracesmith::model::FieldRole::kDelta}, )

// Defines `struct Record` and RecordTraits<Record>.
//   kind:  TableKind enumerator (persisted in files; never renumber)
//   label: short lower-case name used by the CLI ("kernel", "memcpy", ...)
#define TS_DEFINE_RECORD(Record, kind, label, is_event, FIELDS)                                  \
  struct Record {                                                                                \
    FIELDS(TS_MEMBER)                                                                            \
    struct ConfigKey {                                                                           \
      FIELDS(TS_CONFIG_MEMBER)                                                                   \
      bool operator==(const ConfigKey&) const = default;                                         \
    };                                                                                           \
    ConfigKey GetConfig() const {                                                                \
      ConfigKey k;                                                                               \
      [[maybe_unused]] const Record& r = *this;                                                  \
      FIELDS(TS_CONFIG_GET)                                                                      \
      return k;                                                                                  \
    }                                                                                            \
    void SetConfig([[maybe_unused]] const ConfigKey& k) {                                        \
      [[maybe_unused]] Record& r = *this;                                                        \
      FIELDS(TS_CONFIG_SET)                                                                      \
    }                                                                                            \
    static uint64_t HashConfig([[maybe_unused]] const ConfigKey& k) {                            \
      uint64_t h = 0;                                                                            \
      FIELDS(TS_CONFIG_HASH)                                                                     \
      return HashFinish(h);                                                                      \
    }                                                                                            \
    /* Column (non-config) fields of this row to/from column arrays, in */                       \
    /* declaration order: one pass over rows instead of one per column.    */                    \
    void GatherData(uint64_t* const* cols, size_t i) const {                                     \
      [[maybe_unused]] size_t j = 0;                                                             \
      FIELDS(TS_GATHER_DATA)                                                                     \
    }                                                                                            \
    void ScatterData(const uint64_t* const* cols, size_t i) {                                    \
      [[maybe_unused]] size_t j = 0;                                                             \
      FIELDS(TS_SCATTER_DATA)                                                                    \
    }                                                                                            \
    bool operator==(const Record&) const = default;                                              \
  };                                                                                             \
  template <>                                                                                    \
  struct RecordTraits<Record> {                                                                  \
    using R = Record;                                                                            \
    static constexpr TableKind kKind = TableKind::kind;                                          \
    static constexpr const char* kLabel = label;                                                 \
    static constexpr bool kIsEvent = is_event;                                                   \
    static constexpr FieldDesc kAllFields[] = {FIELDS(TS_FIELD_DESC) FieldDesc{}};               \
    static constexpr size_t kNumFields = sizeof(kAllFields) / sizeof(FieldDesc) - 1;             \
    static constexpr FieldDesc kAllConfigFields[] = {FIELDS(TS_CONFIG_DESC) FieldDesc{}};        \
    static constexpr size_t kNumConfigFields = sizeof(kAllConfigFields) / sizeof(FieldDesc) - 1; \
  };
