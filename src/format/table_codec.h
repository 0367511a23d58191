// Encodes and decodes the rows of one record kind as an SBT table payload:
// a per-chunk dictionary of config tuples plus delta/varint columns
// (docs/sbt-format.md, "Table chunks"). Private to format/.
#pragma once

#include <cstdint>
#include <vector>

#include "column_codec.h"
#include "tracesmith/format/sbt.h"
#include "tracesmith/model/records.h"

namespace tracesmith::format::internal {

// Reusable buffers so steady-state encoding does not allocate.
struct CodecScratch {
  std::vector<uint64_t> values;
  std::vector<uint64_t> starts;
  std::vector<uint32_t> dict_index;
  std::vector<int32_t> slots;
};

template <typename T>
void EncodeTable(const T* rows, size_t n, ByteWriter* out, CodecScratch* s) {
  using Traits = model::RecordTraits<T>;
  using Key = typename T::ConfigKey;
  out->PutU16(static_cast<uint16_t>(Traits::kKind));
  out->PutVarint(n);

  // Dictionary of distinct config tuples (open addressing, linear probing).
  std::vector<Key> dict;
  s->dict_index.resize(n);
  size_t cap = 64;
  while (cap < n * 2) cap <<= 1;
  s->slots.assign(cap, -1);
  for (size_t i = 0; i < n; ++i) {
    Key k = rows[i].GetConfig();
    size_t slot = T::HashConfig(k) & (cap - 1);
    while (true) {
      int32_t e = s->slots[slot];
      if (e < 0) {
        s->slots[slot] = static_cast<int32_t>(dict.size());
        s->dict_index[i] = static_cast<uint32_t>(dict.size());
        dict.push_back(k);
        break;
      }
      if (dict[static_cast<size_t>(e)] == k) {
        s->dict_index[i] = static_cast<uint32_t>(e);
        break;
      }
      slot = (slot + 1) & (cap - 1);
    }
  }
  out->PutVarint(dict.size());
  out->PutVarint(Traits::kNumConfigFields);
  s->values.resize(std::max(n, dict.size()));
  for (size_t f = 0; f < Traits::kNumConfigFields; ++f) {
    const auto& fd = Traits::kAllConfigFields[f];
    GatherField(dict.data(), sizeof(Key), dict.size(), fd, s->values.data());
    ApplyRoleEncode(model::FieldRole::kDelta, nullptr, s->values.data(), dict.size());
    EncodeColumn(s->values.data(), dict.size(), false, out);
  }
  for (size_t i = 0; i < n; ++i) s->values[i] = s->dict_index[i];
  EncodeColumn(s->values.data(), n, false, out);

  // Data columns, in declaration order; field 0 of events is the start time.
  out->PutVarint(Traits::kNumFields - Traits::kNumConfigFields);
  s->starts.resize(n);
  bool have_starts = false;
  for (size_t f = 0; f < Traits::kNumFields; ++f) {
    const auto& fd = Traits::kAllFields[f];
    if (fd.role == model::FieldRole::kConfig) continue;
    GatherField(rows, sizeof(T), n, fd, s->values.data());
    if (!have_starts) {
      std::copy(s->values.begin(), s->values.begin() + static_cast<ptrdiff_t>(n), s->starts.begin());
      have_starts = true;
    }
    ApplyRoleEncode(fd.role, s->starts.data(), s->values.data(), n);
    EncodeColumn(s->values.data(), n, fd.role == model::FieldRole::kRaw, out);
  }
}

// Decodes a table payload positioned after its u16 kind; appends to `out`.
template <typename T>
Status DecodeTable(ByteCursor* in, std::vector<T>* out, CodecScratch* s) {
  using Traits = model::RecordTraits<T>;
  using Key = typename T::ConfigKey;
  uint64_t n, dict_size, n_config;
  if (!in->ReadVarint(&n) || !in->ReadVarint(&dict_size) || !in->ReadVarint(&n_config))
    return DataLoss("table header truncated");
  if (n > kMaxRowsPerChunk)
    return DataLoss(StrFormat("row count %llu exceeds the limit %u",
                              static_cast<unsigned long long>(n), kMaxRowsPerChunk));
  if (dict_size > n || (n > 0 && dict_size == 0))
    return DataLoss(StrFormat("dictionary size %llu invalid for %llu rows",
                              static_cast<unsigned long long>(dict_size),
                              static_cast<unsigned long long>(n)));
  std::vector<Key> dict(dict_size);
  s->values.resize(n);
  for (uint64_t f = 0; f < n_config; ++f) {
    if (f >= Traits::kNumConfigFields) {  // written by a newer minor version
      RETURN_IF_ERROR(SkipColumn(in));
      continue;
    }
    RETURN_IF_ERROR(DecodeColumn(in, dict_size, s->values.data()));
    ApplyRoleDecode(model::FieldRole::kDelta, nullptr, s->values.data(), dict_size);
    ScatterField(dict.data(), sizeof(Key), dict_size, Traits::kAllConfigFields[f], s->values.data());
  }
  s->dict_index.resize(n);
  RETURN_IF_ERROR(DecodeColumn(in, n, s->values.data()));
  for (size_t i = 0; i < n; ++i) {
    if (s->values[i] >= dict_size)
      return DataLoss(StrFormat("row %zu references dictionary entry %llu of %llu", i,
                                static_cast<unsigned long long>(s->values[i]),
                                static_cast<unsigned long long>(dict_size)));
    s->dict_index[i] = static_cast<uint32_t>(s->values[i]);
  }

  uint64_t n_data;
  if (!in->ReadVarint(&n_data)) return DataLoss("table column count truncated");
  const size_t base = out->size();
  out->resize(base + n);
  T* rows = out->data() + base;
  for (size_t i = 0; i < n; ++i) rows[i].SetConfig(dict[s->dict_index[i]]);
  s->starts.assign(n, 0);
  bool have_starts = false;
  uint64_t written = 0;
  for (size_t f = 0; f < Traits::kNumFields && written < n_data; ++f) {
    const auto& fd = Traits::kAllFields[f];
    if (fd.role == model::FieldRole::kConfig) continue;
    Status st = DecodeColumn(in, n, s->values.data());
    if (!st.ok()) {
      out->resize(base);
      return DataLoss(StrFormat("column '%s': %s", fd.name, st.message().c_str()));
    }
    ApplyRoleDecode(fd.role, s->starts.data(), s->values.data(), n);
    if (!have_starts) {
      std::copy(s->values.begin(), s->values.begin() + static_cast<ptrdiff_t>(n), s->starts.begin());
      have_starts = true;
    }
    ScatterField(rows, sizeof(T), n, fd, s->values.data());
    ++written;
  }
  for (; written < n_data; ++written) {
    Status st = SkipColumn(in);
    if (!st.ok()) {
      out->resize(base);
      return st;
    }
  }
  return OkStatus();
}

}  // namespace tracesmith::format::internal
