// Column encoding shared by all SBT table chunks (docs/sbt-format.md, "Columns").
// Private to format/.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tracesmith/base/bytes.h"
#include "tracesmith/base/status.h"
#include "tracesmith/model/field.h"

namespace tracesmith::format::internal {

enum ColumnMode : uint8_t {
  kColumnVarint = 0,    // n LEB128 varints
  kColumnConstant = 1,  // one varint, the value of every row
  kColumnRaw64 = 2,     // n little-endian 8-byte values
};

// Writes one column: u8 mode, u32 byte length, data. Picks kColumnConstant
// when all values are equal.
void EncodeColumn(const uint64_t* values, size_t n, bool raw, ByteWriter* out);
// Reads one column of exactly n values into `values`.
Status DecodeColumn(ByteCursor* in, size_t n, uint64_t* values);
// Skips one column (written by a newer minor version).
Status SkipColumn(ByteCursor* in);

// Reads field `f` of n records laid out `stride` bytes apart.
void GatherField(const void* base, size_t stride, size_t n, const model::FieldDesc& f,
                 uint64_t* out);
void ScatterField(void* base, size_t stride, size_t n, const model::FieldDesc& f,
                  const uint64_t* in);

// Role transforms, in place. `starts` is the decoded start_ns column.
// kRelStart predicts each row's offset from start by the previous offset of
// a row with the same dictionary entry (`dict_index`, `dict_size` entries):
// the same kernel on the same stream takes about as long as last time.
void ApplyRoleEncode(model::FieldRole role, const uint64_t* starts, const uint32_t* dict_index,
                     size_t dict_size, uint64_t* v, size_t n);
void ApplyRoleDecode(model::FieldRole role, const uint64_t* starts, const uint32_t* dict_index,
                     size_t dict_size, uint64_t* v, size_t n);

}  // namespace tracesmith::format::internal
