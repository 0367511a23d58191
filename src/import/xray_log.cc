// XRay log decoding. Layouts (little-endian, as compiler-rt writes them):
//
// File header, 32 bytes: u16 version, u16 type (0 basic, 1 FDR), u32 flags
// (bit 0 constant TSC, bit 1 nonstop TSC), u64 cycle frequency (Hz), 16
// bytes free-form (FDR version 1: u64 thread buffer size).
//
// Basic mode: 32-byte records. u16 record type: 0 = function record {u8 cpu,
// u8 entry type, i32 function id, u64 TSC, u32 tid, u32 pid (version 3+)};
// 1 = argument payload of the preceding entry {i32 function id, u32 tid,
// u32 pid, u64 argument}.
//
// FDR mode: a first byte with bit 0 set starts a 16-byte metadata record
// (bits 1-7: its kind, 15 bytes of data); bit 0 clear starts an 8-byte
// function record: u32 {1 bit 0, 3 bits entry type, 28 bits function id},
// u32 TSC delta from the previous record. Version 2+ writes each thread
// buffer as a BufferExtents record (u64: bytes that follow) and that many
// bytes, which begin NewBuffer (tid), WallClockTime, PIDEntry, NewCPUId (cpu,
// absolute TSC). Version 1 buffers have the header's fixed size and end at an
// EndOfBuffer record. TSCWrap sets a new absolute TSC; custom and typed event
// records are followed by their payload and (version 5) carry a TSC delta.
#include "xray_log.h"

#include <cstring>

#include "tracesmith/base/bytes.h"

namespace tracesmith::importer::xray {
namespace {

constexpr size_t kBasicRecordBytes = 32;
constexpr size_t kMetadataBytes = 16;
constexpr size_t kFunctionBytes = 8;

enum MetadataKind : uint8_t {
  kNewBuffer = 0,
  kEndOfBuffer = 1,
  kNewCpuId = 2,
  kTscWrap = 3,
  kWallClockTime = 4,
  kCustomEvent = 5,
  kCallArgument = 6,
  kBufferExtents = 7,
  kTypedEvent = 8,
  kPidEntry = 9,
};

std::string Cut(size_t offset, const char* what, size_t need, size_t left) {
  return StrFormat("byte %zu: %s cut short (%zu bytes needed, %zu left)", offset, what, need, left);
}

void DecodeBasic(std::string_view d, Log* log) {
  size_t pos = kFileHeaderBytes;
  Block* block = nullptr;
  for (; pos < d.size(); pos += kBasicRecordBytes) {
    if (d.size() - pos < kBasicRecordBytes) {
      log->damage = Cut(pos, "basic-mode record", kBasicRecordBytes, d.size() - pos);
      return;
    }
    const char* r = d.data() + pos;
    const uint16_t record_type = LoadUnaligned<uint16_t>(r);
    if (record_type == 1) {  // argument of the entry before it
      ++log->skipped;
      continue;
    }
    if (record_type != 0) {
      log->damage = StrFormat("byte %zu: unknown basic-mode record type %u", pos, record_type);
      return;
    }
    const uint8_t kind = static_cast<uint8_t>(r[3]);
    if (kind == 4 || kind == 5) {  // custom / typed event
      ++log->skipped;
      continue;
    }
    if (kind > kEnterArgs) {
      log->damage = StrFormat("byte %zu: unknown entry type %u", pos, kind);
      return;
    }
    const uint32_t tid = LoadUnaligned<uint32_t>(r + 16);
    const uint32_t pid = log->version >= 3 ? LoadUnaligned<uint32_t>(r + 20) : 0;
    if (block == nullptr || block->tid != tid || block->pid != pid) {
      log->blocks.push_back(Block{.pid = pid, .tid = tid});
      block = &log->blocks.back();
    }
    block->calls.push_back(
        Call{LoadUnaligned<uint64_t>(r + 8), LoadUnaligned<int32_t>(r + 4), kind});
  }
}

class FdrDecoder {
 public:
  FdrDecoder(std::string_view d, Log* log) : d_(d), log_(log) {}

  void Run() {
    if (log_->version == 1) {
      buffer_bytes_ = LoadUnaligned<uint64_t>(d_.data() + 16);
      Records(d_.size());
      return;
    }
    while (pos_ < d_.size()) {
      const size_t left = d_.size() - pos_;
      if (left < kMetadataBytes) return Damage(Cut(pos_, "BufferExtents record", 16, left));
      const uint8_t first = static_cast<uint8_t>(d_[pos_]);
      if ((first & 1) == 0 || (first >> 1) != kBufferExtents)
        return Damage(
            StrFormat("byte %zu: expected a BufferExtents record (FDR version %u starts "
                      "every buffer with one), found first byte 0x%02x",
                      pos_, log_->version, first));
      const size_t extents_at = pos_;
      const uint64_t extent = LoadUnaligned<uint64_t>(d_.data() + pos_ + 1);
      pos_ += kMetadataBytes;
      const bool cut = extent > d_.size() - pos_;
      block_ = -1;  // a buffer's records start with NewBuffer
      if (!Records(cut ? d_.size() : pos_ + extent)) return;
      if (cut)
        return Damage(
            StrFormat("byte %zu: file ends inside the %llu-byte buffer announced at "
                      "byte %zu",
                      d_.size(), static_cast<unsigned long long>(extent), extents_at));
    }
  }

 private:
  void Damage(std::string msg) { log_->damage = std::move(msg); }

  // Decodes the records in [pos_, end); false (with Log::damage set) on damage.
  bool Records(size_t end) {
    while (pos_ < end) {
      const size_t left = end - pos_;
      const char* p = d_.data() + pos_;
      if (p[0] & 1) {
        if (left < kMetadataBytes) {
          Damage(Cut(pos_, "metadata record", kMetadataBytes, left));
          return false;
        }
        if (!Metadata(p, end)) return false;
        continue;
      }
      if (left < kFunctionBytes) {
        Damage(Cut(pos_, "function record", kFunctionBytes, left));
        return false;
      }
      if (block_ < 0) {
        Damage(StrFormat("byte %zu: function record before the buffer's NewBuffer record", pos_));
        return false;
      }
      const uint32_t word = LoadUnaligned<uint32_t>(p);
      const uint8_t kind = (word >> 1) & 7;
      if (kind > kEnterArgs) {
        Damage(StrFormat("byte %zu: unknown function record type %u", pos_, kind));
        return false;
      }
      tsc_ += LoadUnaligned<uint32_t>(p + 4);
      log_->blocks[block_].calls.push_back(Call{tsc_, static_cast<int32_t>(word >> 4), kind});
      pos_ += kFunctionBytes;
    }
    return true;
  }

  bool Metadata(const char* p, size_t end) {
    const uint8_t kind = static_cast<uint8_t>(p[0]) >> 1;
    const char* data = p + 1;
    switch (kind) {
      case kNewBuffer:
        log_->blocks.push_back(Block{.pid = 0, .tid = LoadUnaligned<uint32_t>(data)});
        block_ = static_cast<int64_t>(log_->blocks.size()) - 1;
        buffer_start_ = pos_;
        tsc_ = 0;
        break;
      case kEndOfBuffer:
        // Version 1: the rest of the fixed-size buffer is unused.
        if (log_->version == 1 && buffer_bytes_ > 0) {
          if (buffer_bytes_ > d_.size() - buffer_start_) {
            Damage(StrFormat(
                "byte %zu: file ends inside the %llu-byte buffer that started at byte "
                "%zu",
                d_.size(), static_cast<unsigned long long>(buffer_bytes_), buffer_start_));
            return false;
          }
          const size_t next = buffer_start_ + static_cast<size_t>(buffer_bytes_);
          if (next > pos_) {
            pos_ = next;
            block_ = -1;
            return true;
          }
        }
        break;
      case kNewCpuId:
        tsc_ = LoadUnaligned<uint64_t>(data + 2);
        break;
      case kTscWrap:
        tsc_ = LoadUnaligned<uint64_t>(data);
        break;
      case kWallClockTime:
        break;
      case kCallArgument:
        ++log_->skipped;
        break;
      case kPidEntry:
        if (block_ >= 0) log_->blocks[block_].pid = LoadUnaligned<uint32_t>(data);
        break;
      case kCustomEvent:
      case kTypedEvent: {
        const int32_t size = LoadUnaligned<int32_t>(data);
        const size_t room = end - pos_ - kMetadataBytes;
        if (size < 0 || static_cast<size_t>(size) > room) {
          Damage(StrFormat("byte %zu: %s payload of %d bytes overruns its buffer (%zu bytes left)",
                           pos_, kind == kCustomEvent ? "custom event" : "typed event", size,
                           room));
          return false;
        }
        // Version 5 events carry the TSC delta from the previous record.
        if (kind == kTypedEvent || log_->version >= 5)
          tsc_ += static_cast<uint64_t>(static_cast<int64_t>(LoadUnaligned<int32_t>(data + 4)));
        ++log_->skipped;
        pos_ += kMetadataBytes + static_cast<size_t>(size);
        return true;
      }
      default:  // BufferExtents is only valid at a buffer's start (Run)
        Damage(StrFormat("byte %zu: unexpected metadata record kind %u", pos_, kind));
        return false;
    }
    pos_ += kMetadataBytes;
    return true;
  }

  std::string_view d_;
  Log* log_;
  size_t pos_ = kFileHeaderBytes;
  int64_t block_ = -1;  // index in log_->blocks of the current buffer's block
  uint64_t tsc_ = 0;
  size_t buffer_start_ = 0;
  uint64_t buffer_bytes_ = 0;  // version 1: fixed buffer size from the header
};

}  // namespace

StatusOr<Log> ParseLog(std::string_view d) {
  if (d.size() < kFileHeaderBytes)
    return DataLoss(
        StrFormat("XRay log header cut short (32 bytes needed, %zu present)", d.size()));
  Log log;
  log.version = LoadUnaligned<uint16_t>(d.data());
  log.type = LoadUnaligned<uint16_t>(d.data() + 2);
  const uint32_t flags = LoadUnaligned<uint32_t>(d.data() + 4);
  log.constant_tsc = flags & 1;
  log.nonstop_tsc = flags & 2;
  log.cycle_frequency = LoadUnaligned<uint64_t>(d.data() + 8);
  if (log.type > 1)
    return InvalidArgument(
        StrFormat("byte 2: unknown XRay log type %u (0 is basic mode, 1 FDR mode)", log.type));
  if (log.version < 1 || log.version > 5)
    return Unimplemented(
        StrFormat("byte 0: XRay log version %u is not supported (1-5 are)", log.version));
  if (log.type == 0)
    DecodeBasic(d, &log);
  else
    FdrDecoder(d, &log).Run();
  return log;
}

}  // namespace tracesmith::importer::xray
