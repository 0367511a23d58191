// Macro machinery behind TS_DEFINE_RECORD (records.h). Each record kind is
// written once as an X-macro field list; these macros turn that list into the
// struct, its config key (the fields with role kConfig), and its descriptors.
#pragma once

#include <cstddef>

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

}  // namespace tracesmith::model

// Role dispatch: expands its arguments only for config fields.
#define TS_CFG_kConfig(...) __VA_ARGS__
#define TS_CFG_kTime(...)
#define TS_CFG_kRelStart(...)
#define TS_CFG_kDelta(...)
#define TS_CFG_kRaw(...)

#define TS_MEMBER(type, name, role) type name = 0;
#define TS_CONFIG_MEMBER(type, name, role) TS_CFG_##role(type name = 0;)
#define TS_CONFIG_GET(type, name, role) TS_CFG_##role(k.name = r.name;)
#define TS_CONFIG_SET(type, name, role) TS_CFG_##role(r.name = k.name;)
#define TS_CONFIG_HASH(type, name, role) \
  TS_CFG_##role(h = ::tracesmith::model::HashStep(h, static_cast<uint64_t>(k.name));)
#define TS_FIELD_DESC(type, name, role)                                            \
  ::tracesmith::model::FieldDesc{#name, static_cast<uint16_t>(offsetof(R, name)),  \
                                 ::tracesmith::model::FieldTypeOf<type>(),         \
                                 ::tracesmith::model::FieldRole::role},
#define TS_CONFIG_DESC(type, name, role)                                         \
  TS_CFG_##role(::tracesmith::model::FieldDesc{                                  \
      #name, static_cast<uint16_t>(offsetof(R::ConfigKey, name)),                \
      ::tracesmith::model::FieldTypeOf<type>(), ::tracesmith::model::FieldRole::kDelta}, )

// Defines `struct Record` and RecordTraits<Record>.
//   kind:  TableKind enumerator (persisted in files; never renumber)
//   label: short lower-case name used by the CLI ("kernel", "memcpy", ...)
#define TS_DEFINE_RECORD(Record, kind, label, is_event, FIELDS)                          \
  struct Record {                                                                        \
    FIELDS(TS_MEMBER)                                                                    \
    struct ConfigKey {                                                                   \
      FIELDS(TS_CONFIG_MEMBER)                                                           \
      bool operator==(const ConfigKey&) const = default;                                 \
    };                                                                                   \
    ConfigKey GetConfig() const {                                                        \
      ConfigKey k;                                                                       \
      [[maybe_unused]] const Record& r = *this;                                          \
      FIELDS(TS_CONFIG_GET)                                                              \
      return k;                                                                          \
    }                                                                                    \
    void SetConfig([[maybe_unused]] const ConfigKey& k) {                               \
      [[maybe_unused]] Record& r = *this;                                                \
      FIELDS(TS_CONFIG_SET)                                                              \
    }                                                                                    \
    static uint64_t HashConfig([[maybe_unused]] const ConfigKey& k) {                    \
      uint64_t h = 0;                                                                    \
      FIELDS(TS_CONFIG_HASH)                                                             \
      return HashFinish(h);                                                                          \
    }                                                                                    \
    bool operator==(const Record&) const = default;                                      \
  };                                                                                     \
  template <>                                                                            \
  struct RecordTraits<Record> {                                                          \
    using R = Record;                                                                    \
    static constexpr TableKind kKind = TableKind::kind;                                  \
    static constexpr const char* kLabel = label;                                         \
    static constexpr bool kIsEvent = is_event;                                           \
    static constexpr FieldDesc kAllFields[] = {FIELDS(TS_FIELD_DESC) FieldDesc{}};       \
    static constexpr size_t kNumFields = sizeof(kAllFields) / sizeof(FieldDesc) - 1;     \
    static constexpr FieldDesc kAllConfigFields[] = {FIELDS(TS_CONFIG_DESC) FieldDesc{}}; \
    static constexpr size_t kNumConfigFields =                                           \
        sizeof(kAllConfigFields) / sizeof(FieldDesc) - 1;                                \
  };
