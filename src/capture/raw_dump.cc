#include "raw_dump.h"

#include <cstring>

#include "tracesmith/base/file_util.h"

namespace tracesmith::capture {

StatusOr<std::unique_ptr<RawDumpWriter>> RawDumpWriter::Open(const std::string& path,
                                                             NameSource* inner) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError(path + ": cannot create raw dump: " + std::strerror(errno));
  std::fwrite("TSCUPTI1", 1, 8, f);
  return std::unique_ptr<RawDumpWriter>(new RawDumpWriter(f, inner));
}

RawDumpWriter::~RawDumpWriter() { std::fclose(file_); }

void RawDumpWriter::WriteRecord(const void* record, size_t size) {
  uint32_t n = static_cast<uint32_t>(size);
  Put("R", 1);
  Put(&n, 4);
  Put(record, size);
}

std::string_view RawDumpWriter::String(const char* p) {
  std::string_view s = inner_->String(p);
  if (p && strings_done_.insert(p).second) {
    uint64_t ptr = reinterpret_cast<uint64_t>(p);
    uint32_t n = static_cast<uint32_t>(s.size());
    Put("S", 1);
    Put(&ptr, 8);
    Put(&n, 4);
    Put(s.data(), s.size());
  }
  return s;
}

std::string_view RawDumpWriter::ApiName(uint8_t domain, uint32_t cbid) {
  std::string_view s = inner_->ApiName(domain, cbid);
  if (apis_done_.insert((uint64_t{domain} << 32) | cbid).second) {
    uint32_t n = static_cast<uint32_t>(s.size());
    Put("A", 1);
    Put(&domain, 1);
    Put(&cbid, 4);
    Put(&n, 4);
    Put(s.data(), s.size());
  }
  return s;
}

std::string RawDumpWriter::ThreadName(uint32_t tid) {
  std::string s = inner_->ThreadName(tid);
  if (threads_done_.insert(tid).second) {
    uint32_t n = static_cast<uint32_t>(s.size());
    Put("T", 1);
    Put(&tid, 4);
    Put(&n, 4);
    Put(s.data(), s.size());
  }
  return s;
}

StatusOr<RawDump> ReadRawDump(const std::string& path) {
  ASSIGN_OR_RETURN(std::string data, ReadFileToString(path));
  if (data.size() < 8 || data.compare(0, 8, "TSCUPTI1") != 0)
    return DataLoss(path + ": not a TraceSmith raw CUPTI dump (bad magic)");
  RawDump dump;
  size_t pos = 8;
  auto need = [&](size_t n, const char* what) -> Status {
    if (data.size() - pos < n)
      return DataLoss(StrFormat("%s: byte %zu: %s needs %zu bytes, %zu left", path.c_str(), pos,
                                what, n, data.size() - pos));
    return OkStatus();
  };
  auto u32 = [&]() {
    uint32_t v;
    std::memcpy(&v, data.data() + pos, 4);
    pos += 4;
    return v;
  };
  auto str = [&](uint32_t n) {
    std::string s = data.substr(pos, n);
    pos += n;
    return s;
  };
  while (pos < data.size()) {
    char tag = data[pos++];
    switch (tag) {
      case 'R': {
        RETURN_IF_ERROR(need(4, "record size"));
        uint32_t n = u32();
        RETURN_IF_ERROR(need(n, "record"));
        if (n < sizeof(uint32_t)) return DataLoss(path + ": record shorter than its kind field");
        std::vector<uint64_t> rec((n + 7) / 8 + 1, 0);
        std::memcpy(rec.data(), data.data() + pos, n);
        pos += n;
        dump.records.push_back(std::move(rec));
        break;
      }
      case 'S': {
        RETURN_IF_ERROR(need(12, "string header"));
        uint64_t ptr;
        std::memcpy(&ptr, data.data() + pos, 8);
        pos += 8;
        uint32_t n = u32();
        RETURN_IF_ERROR(need(n, "string"));
        dump.strings[ptr] = str(n);
        break;
      }
      case 'A': {
        RETURN_IF_ERROR(need(9, "API name header"));
        uint8_t domain = static_cast<uint8_t>(data[pos++]);
        uint32_t cbid = u32();
        uint32_t n = u32();
        RETURN_IF_ERROR(need(n, "API name"));
        dump.api_names[{domain, cbid}] = str(n);
        break;
      }
      case 'T': {
        RETURN_IF_ERROR(need(8, "thread name header"));
        uint32_t tid = u32();
        uint32_t n = u32();
        RETURN_IF_ERROR(need(n, "thread name"));
        dump.thread_names[tid] = str(n);
        break;
      }
      default:
        return DataLoss(StrFormat("%s: byte %zu: unknown section tag 0x%02x", path.c_str(), pos - 1,
                                  static_cast<unsigned>(static_cast<uint8_t>(tag))));
    }
  }
  return dump;
}

std::string_view RawDumpNames::String(const char* p) {
  if (!p) return {};
  auto it = dump_->strings.find(reinterpret_cast<uint64_t>(p));
  return it == dump_->strings.end() ? std::string_view("?") : std::string_view(it->second);
}

std::string_view RawDumpNames::ApiName(uint8_t domain, uint32_t cbid) {
  auto it = dump_->api_names.find({domain, cbid});
  return it == dump_->api_names.end() ? std::string_view("?") : std::string_view(it->second);
}

std::string RawDumpNames::ThreadName(uint32_t tid) {
  auto it = dump_->thread_names.find(tid);
  return it == dump_->thread_names.end() ? std::string() : it->second;
}

}  // namespace tracesmith::capture
