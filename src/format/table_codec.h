// Encodes and decodes the rows of one record kind as an SBT table payload:
// a per-chunk dictionary of config tuples plus delta/varint columns
// (docs/sbt-format.md, "Table chunks"). Private to format/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
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
  std::vector<uint64_t> columns;  // data columns, n values each, back to back
  std::vector<uint64_t*> column_ptrs;
};

template <typename T>
constexpr size_t NumDataFields() {
  return model::RecordTraits<T>::kNumFields - model::RecordTraits<T>::kNumConfigFields;
}

// Points s->column_ptrs at `count` columns of n values (zeroed when asked).
inline uint64_t* const* PrepareColumns(CodecScratch* s, size_t count, size_t n, bool zero) {
  if (zero)
    s->columns.assign(count * n, 0);
  else
    s->columns.resize(count * n);
  s->column_ptrs.resize(count);
  for (size_t c = 0; c < count; ++c) s->column_ptrs[c] = s->columns.data() + c * n;
  return s->column_ptrs.data();
}

// Returns the rows' time range {min start, max end} for event kinds ({0,0}
// for metadata), computed from the columns so rows are read only once.
template <typename T>
std::pair<uint64_t, uint64_t> EncodeTable(const T* rows, size_t n, ByteWriter* out,
                                          CodecScratch* s) {
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
  constexpr size_t kData = NumDataFields<T>();
  uint64_t* const* cols = PrepareColumns(s, kData, n, false);
  // One pass over the rows: config tuple into the dictionary, data fields
  // into columns.
  for (size_t i = 0; i < n; ++i) {
    rows[i].GatherData(cols, i);
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
    ApplyRoleEncode(model::FieldRole::kDelta, nullptr, nullptr, 0, s->values.data(), dict.size());
    EncodeColumn(s->values.data(), dict.size(), false, out);
  }
  for (size_t i = 0; i < n; ++i) s->values[i] = s->dict_index[i];
  EncodeColumn(s->values.data(), n, false, out);

  std::pair<uint64_t, uint64_t> range{0, 0};
  if constexpr (Traits::kIsEvent) {
    // Column 0 is the start; column 1 the end where the kind has one.
    const bool has_end = Traits::kAllFields[1].role == model::FieldRole::kRelStart;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      lo = std::min(lo, cols[0][i]);
      hi = std::max(hi, has_end ? std::max(cols[0][i], cols[1][i]) : cols[0][i]);
    }
    if (n) range = {lo, hi};
  }
  // Data columns, in declaration order; column 0 of events is the start time.
  out->PutVarint(kData);
  size_t c = 0;
  for (size_t f = 0; f < Traits::kNumFields; ++f) {
    const auto& fd = Traits::kAllFields[f];
    if (fd.role == model::FieldRole::kConfig) continue;
    if (c == 0) s->starts.assign(cols[0], cols[0] + n);
    ApplyRoleEncode(fd.role, s->starts.data(), s->dict_index.data(), dict.size(), cols[c], n);
    EncodeColumn(cols[c], n, fd.role == model::FieldRole::kRaw, out);
    ++c;
  }
  return range;
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
    ApplyRoleDecode(model::FieldRole::kDelta, nullptr, nullptr, 0, s->values.data(), dict_size);
    ScatterField(dict.data(), sizeof(Key), dict_size, Traits::kAllConfigFields[f],
                 s->values.data());
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
  constexpr size_t kData = NumDataFields<T>();
  // Columns a older writer did not write stay zero.
  uint64_t* const* cols = PrepareColumns(s, kData, n, n_data < kData);
  size_t c = 0;
  for (size_t f = 0; f < Traits::kNumFields && c < n_data; ++f) {
    const auto& fd = Traits::kAllFields[f];
    if (fd.role == model::FieldRole::kConfig) continue;
    Status st = DecodeColumn(in, n, cols[c]);
    if (!st.ok()) return DataLoss(StrFormat("column '%s': %s", fd.name, st.message().c_str()));
    ApplyRoleDecode(fd.role, cols[0], s->dict_index.data(), dict_size, cols[c], n);
    ++c;
  }
  for (uint64_t extra = c; extra < n_data; ++extra) RETURN_IF_ERROR(SkipColumn(in));
  const size_t base = out->size();
  out->resize(base + n);
  T* rows = out->data() + base;
  for (size_t i = 0; i < n; ++i) {
    rows[i].SetConfig(dict[s->dict_index[i]]);
    rows[i].ScatterData(cols, i);
  }
  return OkStatus();
}

}  // namespace tracesmith::format::internal
