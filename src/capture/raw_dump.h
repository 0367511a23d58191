// Raw CUPTI activity dumps: the records of a real capture, byte for byte,
// plus the strings they point to, so conversion tests run without a GPU.
//
// `tracesmith profile --dump-raw DIR` writes DIR/cupti-<pid>.rawdump:
//   "TSCUPTI1", then sections, each starting with one tag byte:
//   'R' u32 size, bytes                 one activity record as CUPTI laid it out
//   'S' u64 pointer, u32 len, bytes     a string a record points to (kernel name...)
//   'A' u8 domain, u32 cbid, u32 len, bytes   an API name
//   'T' u32 tid, u32 len, bytes         a thread name
// Integers are little-endian. Records keep CUPTI's native layout (CUPTI
// version in the file name's sidecar is not needed: layouts only grow).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tracesmith/base/status.h"
#include "tracesmith/capture/activity_converter.h"

namespace tracesmith::capture {

// Decorates the live NameSource: every name looked up is also dumped.
class RawDumpWriter final : public NameSource {
 public:
  static StatusOr<std::unique_ptr<RawDumpWriter>> Open(const std::string& path, NameSource* inner);
  ~RawDumpWriter() override;
  void WriteRecord(const void* record, size_t size);
  std::string_view String(const char* p) override;
  std::string_view ApiName(uint8_t domain, uint32_t cbid) override;
  std::string ThreadName(uint32_t tid) override;

 private:
  RawDumpWriter(FILE* f, NameSource* inner) : file_(f), inner_(inner) {}
  void Put(const void* p, size_t n) { std::fwrite(p, 1, n, file_); }
  FILE* file_;
  NameSource* inner_;
  std::unordered_set<const char*> strings_done_;
  std::unordered_set<uint64_t> apis_done_;
  std::unordered_set<uint32_t> threads_done_;
};

// A dump read back: records (8-byte aligned) and the names they refer to.
struct RawDump {
  std::vector<std::vector<uint64_t>> records;
  std::map<uint64_t, std::string> strings;
  std::map<std::pair<uint8_t, uint32_t>, std::string> api_names;
  std::map<uint32_t, std::string> thread_names;
  const CUpti_Activity* record(size_t i) const {
    return reinterpret_cast<const CUpti_Activity*>(records[i].data());
  }
};

StatusOr<RawDump> ReadRawDump(const std::string& path);

// NameSource over a RawDump (strings missing from the dump read as "?").
class RawDumpNames final : public NameSource {
 public:
  explicit RawDumpNames(const RawDump* dump) : dump_(dump) {}
  std::string_view String(const char* p) override;
  std::string_view ApiName(uint8_t domain, uint32_t cbid) override;
  std::string ThreadName(uint32_t tid) override;

 private:
  const RawDump* dump_;
};

}  // namespace tracesmith::capture
