// NVTX extended payloads: the typed data a library attaches to its NVTX
// ranges and marks through NVTX 3's payload extension (nvToolsExtPayload.h),
// decoded by the schemas the library registered. NCCL 2.19+ puts each call's
// communicator, message size, reduction and root there, and its
// communicator's size and the caller's rank in it on ncclCommInitRank's
// range (issue #41 item 4: collectives with their sizes, no naming
// convention needed).
//
// How they reach the capture: the NVTX library looks for
// InitializeInjectionNvtxExtension in the injection library
// (NVTX_INJECTION64_PATH: ours, injection.cc) when a program first calls a
// payload function; ours fills the payload module's schema and enum
// registration slots, which land here. The payloads themselves arrive with
// the range or mark (payloadType NVTX_PAYLOAD_TYPE_EXT: the attribute's
// ullValue points to nvtxPayloadData_t entries), seen in CUPTI's NVTX
// callback (nvtx_payloads_recorder.cc), which copies the bytes; the writer
// thread decodes them here into text rows (model::NvtxPayloadEvent).
//
// This file knows the schemas in its own terms (no NVTX header): the
// conversion from NVTX's structs is in injection.cc; tests build schemas
// directly. What is decoded: entries of the fixed-size scalar types (the
// C integer types, fixed-width integers, size_t, float, double, addresses)
// and enums registered with nvtxPayloadEnumRegister (written by their
// value's name); entries that are pointers, arrays, strings, nested schemas
// or hidden (NVTX_PAYLOAD_ENTRY_FLAG_HIDE) are left out. An entry's offset is
// the schema's; an entry after the first with offset 0 is placed by C's
// natural alignment after the one before it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tracesmith::capture {

// NVTX's numbers this file decodes by (nvToolsExtPayload.h, payload
// extension version 1: fixed by the ABI).
namespace nvtx_payload {
inline constexpr uint64_t kTypeChar = 1;      // NVTX_PAYLOAD_ENTRY_TYPE_CHAR ...
inline constexpr uint64_t kTypeChar32 = 27;   // ... to NVTX_PAYLOAD_ENTRY_TYPE_CHAR32
inline constexpr uint64_t kTypeFloat = 19;    // NVTX_PAYLOAD_ENTRY_TYPE_FLOAT
inline constexpr uint64_t kTypeDouble = 20;   // NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE
inline constexpr uint64_t kTypeAddress = 23;  // NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS
inline constexpr uint64_t kFlagPointer = 1u << 1;
inline constexpr uint64_t kFlagArrayMask = 7u << 4;  // NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY
inline constexpr uint64_t kFlagHide = 1u << 9;
inline constexpr uint64_t kDynamicSchemaStart = uint64_t(1)
                                                << 32;  // NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START
inline constexpr int32_t kPayloadTypeExt = int32_t(0xDFBD0009);  // NVTX_PAYLOAD_TYPE_EXT
}  // namespace nvtx_payload

struct PayloadEntry {
  std::string name;
  uint64_t type = 0, flags = 0, offset = 0;
};
struct PayloadSchema {
  uint64_t id = 0;    // 0: none given (a dynamic id is assigned)
  uint64_t size = 0;  // the payload's static size; 0: not given
  std::vector<PayloadEntry> entries;
};
struct PayloadEnum {
  uint64_t id = 0;
  uint64_t size = 0;  // bytes of the enum's values (sizeOfEnum)
  std::vector<std::pair<std::string, uint64_t>> values;
};

// The schemas and enums registered in this process, per NVTX domain (ids are
// per domain). Thread-safe; registration is rare (once per schema).
class NvtxPayloadSchemas {
 public:
  static NvtxPayloadSchemas& Get();  // the process's (never destroyed)

  // The id the schema or enum is known by: its own, or a new dynamic one.
  uint64_t AddSchema(const void* domain, PayloadSchema schema);
  uint64_t AddEnum(const void* domain, PayloadEnum e);

  // "name=value; name=value" for one payload of schema `id` in `domain`
  // (entries without a name are "#<index>"); empty when the schema is
  // unknown or nothing in it is decodable within `bytes`.
  std::string Describe(const void* domain, uint64_t id, std::span<const uint8_t> bytes) const;

  size_t schema_count() const;

  // Whether a schema with this id was registered (in any domain): lock-free,
  // for the NVTX callback on the program's thread, which reads a payload's
  // bytes only when its schema is known — an extended payload whose data
  // names no registered schema is not read (its pointers may be anything:
  // NCCL 2.28's calls inside a group, on 2×H200, 2026-11-30).
  bool IsRegisteredId(uint64_t id) const;

 private:
  using Key = std::pair<const void*, uint64_t>;
  mutable std::mutex mu_;
  std::map<Key, PayloadSchema> schemas_;
  std::map<Key, PayloadEnum> enums_;
  uint64_t next_dynamic_ = nvtx_payload::kDynamicSchemaStart;
  static constexpr int kMaxIds = 256;  // ids IsRegisteredId knows (more: all known)
  std::atomic<uint64_t> ids_[kMaxIds] = {};
  std::atomic<int> id_count_{0};
};

// Bytes of a scalar entry type (the C types as this process's ABI has
// them); 0 for a type this file does not decode.
size_t PayloadScalarSize(uint64_t type);

}  // namespace tracesmith::capture
