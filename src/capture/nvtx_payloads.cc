#include "nvtx_payloads.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace tracesmith::capture {

namespace np = nvtx_payload;

NvtxPayloadSchemas& NvtxPayloadSchemas::Get() {
  static NvtxPayloadSchemas* schemas = new NvtxPayloadSchemas;
  return *schemas;
}

size_t PayloadScalarSize(uint64_t type) {
  // NVTX_PAYLOAD_ENTRY_TYPE_CHAR (1) ... _CHAR32 (27), in the header's order.
  // clang-format off
  static constexpr uint8_t kSizes[] = {
      0,
      sizeof(char), sizeof(unsigned char), sizeof(short), sizeof(unsigned short),  // 1-4
      sizeof(int), sizeof(unsigned), sizeof(long), sizeof(unsigned long),          // 5-8
      sizeof(long long), sizeof(unsigned long long),                               // 9-10
      1, 1, 2, 2, 4, 4, 8, 8,                                                      // 11-18
      sizeof(float), sizeof(double), 0 /* long double */, sizeof(size_t),          // 19-22
      sizeof(void*), sizeof(wchar_t), 1, 2, 4};                                    // 23-27
  // clang-format on
  return type < sizeof(kSizes) ? kSizes[type] : 0;
}

namespace {

// Signed types among the integer ones (CHAR, SHORT, INT, LONG, LONGLONG, INT8..INT64, WCHAR).
bool IsSigned(uint64_t type) {
  switch (type) {
    case 1:
    case 3:
    case 5:
    case 7:
    case 9:
    case 11:
    case 13:
    case 15:
    case 17:
    case 24:
      return true;
    default:
      return false;
  }
}

uint64_t ReadUnsigned(const uint8_t* p, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);  // little-endian hosts (the ones CUDA runs on)
  return v;
}

int64_t ReadSigned(const uint8_t* p, size_t size) {
  const uint64_t v = ReadUnsigned(p, size);
  const unsigned shift = unsigned(64 - 8 * size);
  return shift >= 64 ? 0 : int64_t(v << shift) >> shift;
}

}  // namespace

uint64_t NvtxPayloadSchemas::AddSchema(const void* domain, PayloadSchema schema) {
  std::lock_guard<std::mutex> lock(mu_);
  if (schema.id == 0) schema.id = next_dynamic_++;
  const uint64_t id = schema.id;
  schemas_[{domain, id}] = std::move(schema);
  // Published after the schema (release): a callback that sees the id finds it.
  const int n = id_count_.load(std::memory_order_relaxed);
  if (n < kMaxIds) ids_[n].store(id, std::memory_order_relaxed);
  id_count_.store(n + 1, std::memory_order_release);
  return id;
}

uint64_t NvtxPayloadSchemas::AddEnum(const void* domain, PayloadEnum e) {
  std::lock_guard<std::mutex> lock(mu_);
  if (e.id == 0) e.id = next_dynamic_++;
  const uint64_t id = e.id;
  enums_[{domain, id}] = std::move(e);
  return id;
}

size_t NvtxPayloadSchemas::schema_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return schemas_.size();
}

bool NvtxPayloadSchemas::IsRegisteredId(uint64_t id) const {
  const int n = id_count_.load(std::memory_order_acquire);
  if (n > kMaxIds) return true;  // past the table: no check
  for (int i = 0; i < n; ++i)
    if (ids_[i].load(std::memory_order_relaxed) == id) return true;
  return false;
}

std::string NvtxPayloadSchemas::Describe(const void* domain, uint64_t id,
                                         std::span<const uint8_t> bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = schemas_.find({domain, id});
  if (s == schemas_.end()) return {};
  std::string out;
  uint64_t next = 0;  // where an entry without an offset starts
  for (size_t i = 0; i < s->second.entries.size(); ++i) {
    const PayloadEntry& e = s->second.entries[i];
    const PayloadEnum* en = nullptr;
    size_t size = PayloadScalarSize(e.type);
    if (size == 0) {
      auto found = enums_.find({domain, e.type});
      if (found != enums_.end() && found->second.size > 0 && found->second.size <= 8) {
        en = &found->second;
        size = size_t(en->size);
      }
    }
    if (size == 0 || (e.flags & (np::kFlagPointer | np::kFlagArrayMask))) break;  // layout unknown
    uint64_t offset = e.offset;
    if (i > 0 && offset == 0) offset = (next + size - 1) / size * size;  // natural alignment
    next = offset + size;
    if ((e.flags & np::kFlagHide) || offset + size > bytes.size()) continue;
    const uint8_t* p = bytes.data() + offset;
    char value[96];
    if (en) {
      const uint64_t v = ReadUnsigned(p, size);
      const char* name = nullptr;
      for (const auto& [n, ev] : en->values)
        if (ev == v) name = n.c_str();
      if (name)
        std::snprintf(value, sizeof(value), "%s", name);
      else
        std::snprintf(value, sizeof(value), "%" PRIu64, v);
    } else if (e.type == np::kTypeFloat || e.type == np::kTypeDouble) {
      double d = 0;
      if (e.type == np::kTypeFloat) {
        float f;
        std::memcpy(&f, p, sizeof(f));
        d = f;
      } else {
        std::memcpy(&d, p, sizeof(d));
      }
      std::snprintf(value, sizeof(value), "%.17g", d);
    } else if (e.type == np::kTypeAddress) {
      std::snprintf(value, sizeof(value), "0x%" PRIx64, ReadUnsigned(p, size));
    } else if (IsSigned(e.type)) {
      std::snprintf(value, sizeof(value), "%" PRId64, ReadSigned(p, size));
    } else {
      std::snprintf(value, sizeof(value), "%" PRIu64, ReadUnsigned(p, size));
    }
    if (!out.empty()) out += "; ";
    if (e.name.empty())
      out += "#" + std::to_string(i);
    else
      out += e.name;
    out += '=';
    out += value;
  }
  return out;
}

}  // namespace tracesmith::capture
