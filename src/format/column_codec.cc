#include "column_codec.h"

#include <cstring>
#include <vector>

namespace tracesmith::format::internal {

using model::FieldDesc;
using model::FieldRole;
using model::FieldType;

void EncodeColumn(const uint64_t* values, size_t n, bool raw, ByteWriter* out) {
  bool constant = n > 0;
  for (size_t i = 1; i < n && constant; ++i) constant = values[i] == values[0];
  const size_t len_pos = out->size() + 1;
  if (constant) {
    out->PutU8(kColumnConstant);
    out->PutU32(0);
    out->PutVarint(values[0]);
  } else if (raw) {
    out->PutU8(kColumnRaw64);
    out->PutU32(0);
    out->PutBytes(values, n * 8);
  } else {
    out->PutU8(kColumnVarint);
    out->PutU32(0);
    auto& buf = out->buffer();
    size_t pos = buf.size();
    buf.resize(pos + n * 10);  // worst case; trimmed below
    uint8_t* p = buf.data() + pos;
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = values[i];
      while (v >= 0x80) {
        *p++ = static_cast<uint8_t>(v) | 0x80;
        v >>= 7;
      }
      *p++ = static_cast<uint8_t>(v);
    }
    buf.resize(static_cast<size_t>(p - buf.data()));
  }
  out->PatchU32(len_pos, static_cast<uint32_t>(out->size() - len_pos - 4));
}

Status DecodeColumn(ByteCursor* in, size_t n, uint64_t* values) {
  uint8_t mode;
  uint32_t len;
  ByteCursor col;
  if (!in->ReadU8(&mode) || !in->ReadU32(&len) || !in->Sub(len, &col))
    return DataLoss(
        StrFormat("column header at payload byte %zu runs past the chunk end", in->position()));
  switch (mode) {
    case kColumnConstant: {
      uint64_t v;
      if (!col.ReadVarint(&v) || !col.empty()) return DataLoss("malformed constant column");
      for (size_t i = 0; i < n; ++i) values[i] = v;
      return OkStatus();
    }
    case kColumnRaw64:
      if (len != n * 8)
        return DataLoss(StrFormat("raw column holds %u bytes, %zu rows need %zu", len, n, n * 8));
      if (n) std::memcpy(values, col.current(), n * 8);
      return OkStatus();
    case kColumnVarint: {
      if (len < n)
        return DataLoss(StrFormat("varint column of %u bytes cannot hold %zu rows", len, n));
      const uint8_t* p = col.current();
      const uint8_t* end = p + len;
      for (size_t i = 0; i < n; ++i) {
        // Fast path: a whole 10-byte varint fits before the end.
        uint64_t result = 0;
        int shift = 0;
        while (true) {
          if (p == end || shift > 63) return DataLoss(StrFormat("malformed varint in row %zu", i));
          uint8_t b = *p++;
          result |= static_cast<uint64_t>(b & 0x7f) << shift;
          if (!(b & 0x80)) break;
          shift += 7;
        }
        values[i] = result;
      }
      if (p != end) return DataLoss("varint column has trailing bytes");
      return OkStatus();
    }
    default:
      return DataLoss(StrFormat("unknown column mode %u", mode));
  }
}

Status SkipColumn(ByteCursor* in) {
  uint8_t mode;
  uint32_t len;
  if (!in->ReadU8(&mode) || !in->ReadU32(&len) || !in->Skip(len))
    return DataLoss("column runs past the chunk end");
  return OkStatus();
}

namespace {
template <typename V>
void GatherAs(const uint8_t* p, size_t stride, size_t n, uint64_t* out) {
  for (size_t i = 0; i < n; ++i, p += stride) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    out[i] = model::WidenFieldBits(v);
  }
}
template <typename V>
void ScatterAs(uint8_t* p, size_t stride, size_t n, const uint64_t* in) {
  for (size_t i = 0; i < n; ++i, p += stride) {
    auto v = static_cast<V>(in[i]);
    std::memcpy(p, &v, sizeof(V));
  }
}
}  // namespace

void GatherField(const void* base, size_t stride, size_t n, const FieldDesc& f, uint64_t* out) {
  const auto* p = static_cast<const uint8_t*>(base) + f.offset;
  model::VisitFieldBits(f.type, [&]<typename V>() { GatherAs<V>(p, stride, n, out); });
}

void ScatterField(void* base, size_t stride, size_t n, const FieldDesc& f, const uint64_t* in) {
  auto* p = static_cast<uint8_t*>(base) + f.offset;
  model::VisitFieldBits(f.type, [&]<typename V>() { ScatterAs<V>(p, stride, n, in); });
}

void ApplyRoleEncode(FieldRole role, const uint64_t* starts, const uint32_t* dict_index,
                     size_t dict_size, uint64_t* v, size_t n) {
  switch (role) {
    case FieldRole::kTime:
    case FieldRole::kDelta: {
      uint64_t prev = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t cur = v[i];
        v[i] = ZigZagEncode(static_cast<int64_t>(cur - prev));
        prev = cur;
      }
      return;
    }
    case FieldRole::kRelStart: {
      std::vector<uint64_t> pred(dict_size, 0);
      for (size_t i = 0; i < n; ++i) {
        if (v[i] == 0) continue;
        uint64_t offset = v[i] - starts[i];
        uint64_t& p = pred[dict_index[i]];
        v[i] = ZigZagEncode(static_cast<int64_t>(offset - p)) + 1;
        p = offset;
      }
      return;
    }
    case FieldRole::kRaw:
    case FieldRole::kConfig:
      return;
  }
}

void ApplyRoleDecode(FieldRole role, const uint64_t* starts, const uint32_t* dict_index,
                     size_t dict_size, uint64_t* v, size_t n) {
  switch (role) {
    case FieldRole::kTime:
    case FieldRole::kDelta: {
      uint64_t prev = 0;
      for (size_t i = 0; i < n; ++i) {
        prev += static_cast<uint64_t>(ZigZagDecode(v[i]));
        v[i] = prev;
      }
      return;
    }
    case FieldRole::kRelStart: {
      std::vector<uint64_t> pred(dict_size, 0);
      for (size_t i = 0; i < n; ++i) {
        if (v[i] == 0) continue;
        uint64_t& p = pred[dict_index[i]];
        p += static_cast<uint64_t>(ZigZagDecode(v[i] - 1));
        v[i] = starts[i] + p;
      }
      return;
    }
    case FieldRole::kRaw:
    case FieldRole::kConfig:
      return;
  }
}

}  // namespace tracesmith::format::internal
