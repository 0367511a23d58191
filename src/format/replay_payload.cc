#include "tracesmith/format/replay_payload.h"

#include <algorithm>
#include <cstring>

#include "tracesmith/base/bytes.h"

namespace tracesmith::format {

const char* PayloadChunkName(uint16_t type) {
  switch (static_cast<PayloadChunk>(type)) {
    case PayloadChunk::kCaptureInfo:
      return "replay capture-info";
    case PayloadChunk::kBlobPiece:
      return "replay blob";
    case PayloadChunk::kModule:
      return "replay module";
    case PayloadChunk::kLaunch:
      return "replay launch";
    case PayloadChunk::kSnapshot:
      return "replay snapshot";
    case PayloadChunk::kStreamOp:
      return "replay stream op";
    case PayloadChunk::kGraphLaunch:
      return "replay graph launch";
  }
  return "replay (unknown type)";
}

std::string LaunchAttributeName(uint32_t id) {
  // CUlaunchAttributeID (cuda.h), by value: format/ does not include CUDA headers.
  static const char* const kNames[] = {"ignore",
                                       "access policy window",
                                       "cooperative",
                                       "synchronization policy",
                                       "cluster dimension",
                                       "cluster scheduling policy",
                                       "programmatic stream serialization",
                                       "programmatic event",
                                       "priority",
                                       "memory sync domain map",
                                       "memory sync domain",
                                       "preferred cluster dimension",
                                       "launch completion event",
                                       "device-updatable kernel node",
                                       "preferred shared memory carveout"};
  if (id < sizeof(kNames) / sizeof(kNames[0])) return kNames[id];
  return StrFormat("attribute %u", id);
}

const char* MemoryScopeName(MemoryScope scope) {
  switch (scope) {
    case MemoryScope::kParams:
      return "params";
    case MemoryScope::kReachable:
      return "reachable";
    case MemoryScope::kAll:
      return "all";
    case MemoryScope::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<MemoryScope> MemoryScopeFromName(std::string_view name) {
  for (MemoryScope s : {MemoryScope::kParams, MemoryScope::kReachable, MemoryScope::kAll})
    if (name == MemoryScopeName(s)) return s;
  return std::nullopt;
}

const char* StreamOpKindName(StreamOpKind kind) {
  switch (kind) {
    case StreamOpKind::kStreamInfo:
      return "stream";
    case StreamOpKind::kCopyHtoD:
      return "copy HtoD";
    case StreamOpKind::kCopyDtoD:
      return "copy DtoD";
    case StreamOpKind::kCopyDtoH:
      return "copy DtoH";
    case StreamOpKind::kMemset:
      return "memset";
    case StreamOpKind::kEventRecord:
      return "event record";
    case StreamOpKind::kStreamWaitEvent:
      return "stream wait event";
    case StreamOpKind::kStreamSync:
      return "stream synchronize";
    case StreamOpKind::kEventSync:
      return "event synchronize";
    case StreamOpKind::kContextSync:
      return "context synchronize";
  }
  return "unknown";
}

namespace {

constexpr uint8_t kPayloadVersion = 1;
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                   kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull;

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t Round(uint64_t h, uint64_t w) {
  h ^= Rotl(w * kP2, 31) * kP1;
  return Rotl(h, 27) * kP1 + kP4;
}

}  // namespace

uint64_t ContentHash(std::span<const uint8_t> bytes) {
  uint64_t h = kP3 ^ (uint64_t(bytes.size()) * kP2);
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);  // little-endian hosts (see bytes.h)
    h = Round(h, w);
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = Round(h, w);
  }
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

// ---- writer ------------------------------------------------------------------

StatusOr<uint64_t> ReplayPayloadWriter::AddBlob(std::span<const uint8_t> bytes) {
  if (bytes.size() > kMaxBlobBytes)
    return InvalidArgument(StrFormat("blob of %zu bytes exceeds the %llu-byte limit", bytes.size(),
                                     static_cast<unsigned long long>(kMaxBlobBytes)));
  const uint64_t hash = ContentHash(bytes);
  auto it = written_.find(hash);
  if (it != written_.end()) {
    if (it->second != bytes.size())
      return Internal(StrFormat("content hash 0x%016llx collides for blobs of %llu and %zu bytes",
                                static_cast<unsigned long long>(hash),
                                static_cast<unsigned long long>(it->second), bytes.size()));
    deduplicated_++;
    return hash;
  }
  ByteWriter w;
  uint64_t offset = 0;
  do {  // an empty blob still gets one (empty) piece
    const uint64_t len = std::min<uint64_t>(kBlobPieceBytes, bytes.size() - offset);
    w.Clear();
    w.PutU8(kPayloadVersion);
    w.PutU64(hash);
    w.PutVarint(bytes.size());
    w.PutVarint(offset);
    w.PutVarint(len);
    w.PutBytes(bytes.data() + offset, len);
    RETURN_IF_ERROR(writer_->WriteRawChunk(uint16_t(PayloadChunk::kBlobPiece), w.buffer()));
    offset += len;
  } while (offset < bytes.size());
  written_[hash] = bytes.size();
  blob_bytes_ += bytes.size();
  return hash;
}

Status ReplayPayloadWriter::WriteCaptureInfo(const CaptureInfo& info) {
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutString(info.device_name);
  w.PutVarint(info.cc_major);
  w.PutVarint(info.cc_minor);
  w.PutVarint(info.driver_version);
  w.PutString(info.tool);
  return writer_->WriteRawChunk(uint16_t(PayloadChunk::kCaptureInfo), w.buffer());
}

StatusOr<uint64_t> ReplayPayloadWriter::AddModule(std::span<const uint8_t> image, ImageKind kind,
                                                  const std::string& name) {
  const bool fresh = !written_.count(ContentHash(image));
  ASSIGN_OR_RETURN(uint64_t hash, AddBlob(image));
  if (!fresh) return hash;  // the module record was written with the blob
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutU64(hash);
  w.PutU8(uint8_t(kind));
  w.PutString(name);
  RETURN_IF_ERROR(writer_->WriteRawChunk(uint16_t(PayloadChunk::kModule), w.buffer()));
  return hash;
}

namespace {

// Encoding pieces shared by kernel launches (0x43) and the kernel nodes of
// graph launches (0x46).
Status CheckKernel(const LaunchRecord& l, const std::string& what) {
  if (l.param_info.size() > kMaxParams || l.params.size() > kMaxParamBytes)
    return InvalidArgument(StrFormat("%s: %zu parameters / %zu bytes exceed the limits",
                                     what.c_str(), l.param_info.size(), l.params.size()));
  for (const ParamInfo& p : l.param_info)
    if (uint64_t(p.offset) + p.size > l.params.size())
      return InvalidArgument(
          StrFormat("%s: parameter at offset %u size %u is outside "
                    "the %zu-byte parameter buffer",
                    what.c_str(), p.offset, p.size, l.params.size()));
  if (l.attributes.size() > kMaxLaunchAttributes)
    return InvalidArgument(StrFormat("%s: %zu launch attributes (at most %u)", what.c_str(),
                                     l.attributes.size(), kMaxLaunchAttributes));
  for (const LaunchAttribute& a : l.attributes)
    if (a.value.size() > kMaxLaunchAttributeBytes)
      return InvalidArgument(
          StrFormat("%s: launch attribute %u of %zu bytes", what.c_str(), a.id, a.value.size()));
  return OkStatus();
}

// module_hash, function, grid/block/cluster, dynamic shared memory.
void PutKernelHead(ByteWriter& w, const LaunchRecord& l) {
  w.PutU64(l.module_hash);
  w.PutString(l.function);
  for (const uint32_t* v : {l.grid, l.block, l.cluster})
    for (int k = 0; k < 3; ++k) w.PutVarint(v[k]);
  w.PutVarint(l.dynamic_shared_bytes);
}

// Parameter layout and buffer.
void PutParams(ByteWriter& w, const LaunchRecord& l) {
  w.PutVarint(l.param_info.size());
  for (const ParamInfo& p : l.param_info) {
    w.PutVarint(p.offset);
    w.PutVarint(p.size);
  }
  w.PutVarint(l.params.size());
  w.PutBytes(l.params.data(), l.params.size());
}

void PutAttributes(ByteWriter& w, const std::vector<LaunchAttribute>& attributes) {
  w.PutVarint(attributes.size());
  for (const LaunchAttribute& a : attributes) {
    w.PutVarint(a.id);
    w.PutVarint(a.value.size());
    w.PutBytes(a.value.data(), a.value.size());
  }
}

void PutCoverage(ByteWriter& w, const MemoryCoverage& c) {
  w.PutU8(uint8_t(c.scope));
  w.PutVarint(c.ranges_over_budget);
  w.PutVarint(c.bytes_over_budget);
  w.PutVarint(c.ranges_past_depth);
  w.PutVarint(c.words_unresolved);
}

}  // namespace

Status ReplayPayloadWriter::AddLaunch(const LaunchRecord& l) {
  RETURN_IF_ERROR(
      CheckKernel(l, StrFormat("launch %llu", static_cast<unsigned long long>(l.index))));
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutVarint(l.index);
  PutKernelHead(w, l);
  w.PutVarint(l.stream_id);
  w.PutVarint(l.recorded_ns);
  w.PutVarint(l.snapshot_ranges);
  PutParams(w, l);
  if (l.correlation_id || !l.attributes.empty()) w.PutVarint(l.correlation_id);
  if (!l.attributes.empty()) PutAttributes(w, l.attributes);
  const MemoryCoverage& c = l.coverage;
  if (c.scope != MemoryScope::kUnknown) {
    if (l.attributes.empty()) {
      if (!l.correlation_id) w.PutVarint(0);  // the correlation id, absent above
      w.PutVarint(0);                         // no attributes
    }
    PutCoverage(w, c);
  }
  return writer_->WriteRawChunk(uint16_t(PayloadChunk::kLaunch), w.buffer());
}

Status ReplayPayloadWriter::AddGraphLaunch(const GraphLaunchRecord& g) {
  const auto index = static_cast<unsigned long long>(g.index);
  if (g.nodes.size() > kMaxGraphNodes)
    return InvalidArgument(StrFormat("graph launch %llu: %zu nodes (at most %u)", index,
                                     g.nodes.size(), kMaxGraphNodes));
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutVarint(g.index);
  w.PutVarint(g.correlation_id);
  w.PutVarint(g.stream_id);
  w.PutVarint(g.recorded_ns);
  w.PutVarint(g.snapshot_ranges);
  PutCoverage(w, g.coverage);
  w.PutVarint(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const GraphNodeRecord& n = g.nodes[k];
    for (uint32_t d : n.dependencies)
      if (d >= k)
        return InvalidArgument(StrFormat(
            "graph launch %llu: node %zu depends on node %u, not an earlier one", index, k, d));
    w.PutU8(uint8_t(n.kind));
    w.PutVarint(n.dependencies.size());
    for (uint32_t d : n.dependencies) w.PutVarint(d);
    switch (n.kind) {
      case GraphNodeKind::kKernel:
        RETURN_IF_ERROR(CheckKernel(n.kernel, StrFormat("graph launch %llu node %zu", index, k)));
        PutKernelHead(w, n.kernel);
        PutParams(w, n.kernel);
        PutAttributes(w, n.kernel.attributes);
        break;
      case GraphNodeKind::kMemset:
        w.PutU64(n.dst);
        w.PutVarint(n.dst_pitch);
        w.PutVarint(n.value);
        w.PutU8(n.element_size);
        w.PutVarint(n.width);
        w.PutVarint(n.height);
        break;
      case GraphNodeKind::kMemcpy:
        w.PutU64(n.dst);
        w.PutU64(n.src);
        w.PutVarint(n.dst_pitch);
        w.PutVarint(n.src_pitch);
        w.PutVarint(n.width);
        w.PutVarint(n.height);
        break;
      case GraphNodeKind::kEmpty:
        break;
      default:
        return InvalidArgument(StrFormat("graph launch %llu: node %zu of unknown kind %u", index, k,
                                         unsigned(n.kind)));
    }
  }
  return writer_->WriteRawChunk(uint16_t(PayloadChunk::kGraphLaunch), w.buffer());
}

Status ReplayPayloadWriter::AddSnapshot(uint64_t launch_index, SnapshotPhase phase,
                                        uint64_t address, std::span<const uint8_t> bytes,
                                        const SnapshotOrigin& origin) {
  ASSIGN_OR_RETURN(uint64_t hash, AddBlob(bytes));
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutVarint(launch_index);
  w.PutU8(uint8_t(phase));
  w.PutU64(address);
  w.PutVarint(bytes.size());
  w.PutU64(hash);
  if (origin.source != RangeSource::kParameter) {
    w.PutU8(uint8_t(origin.source));
    w.PutU64(origin.via);
    w.PutVarint(origin.first_offset);
    w.PutVarint(origin.last_offset);
    w.PutVarint(origin.pointers);
    w.PutVarint(origin.depth);
  }
  return writer_->WriteRawChunk(uint16_t(PayloadChunk::kSnapshot), w.buffer());
}

Status ReplayPayloadWriter::AddStreamOp(StreamOpRecord op, std::span<const uint8_t> data) {
  if (op.kind == StreamOpKind::kCopyHtoD) {
    ASSIGN_OR_RETURN(op.data_hash, AddBlob(data));
    op.bytes = data.size();
  }
  ByteWriter w;
  w.PutU8(kPayloadVersion);
  w.PutVarint(op.before_launch);
  w.PutVarint(op.seq);
  w.PutU8(uint8_t(op.kind));
  w.PutVarint(op.stream);
  w.PutVarint(op.event);
  w.PutVarint(op.flags);
  w.PutU64(op.dst);
  w.PutU64(op.src);
  w.PutVarint(op.bytes);
  w.PutU64(uint64_t(op.value));
  w.PutU8(op.element_size);
  w.PutU64(op.data_hash);
  return writer_->WriteRawChunk(uint16_t(PayloadChunk::kStreamOp), w.buffer());
}

// ---- reader ------------------------------------------------------------------

namespace {

// Bounds-checked field reader whose errors say which chunk and payload byte.
class FieldReader {
 public:
  FieldReader(uint16_t type, std::span<const uint8_t> p, uint64_t offset)
      : type_(type), c_(p.data(), p.size()), offset_(offset) {}

  Status Error(const std::string& what) const {
    return DataLoss(StrFormat("%s chunk at byte %llu (0x%llx): payload byte %zu: %s",
                              PayloadChunkName(type_), static_cast<unsigned long long>(offset_),
                              static_cast<unsigned long long>(offset_), c_.position(),
                              what.c_str()));
  }
  Status U8(uint8_t* v, const char* what) { return c_.ReadU8(v) ? OkStatus() : Missing(what); }
  // A one-byte enumeration in [min, max]; else "unknown <what> N".
  template <typename E>
  Status Enum(E* v, uint8_t min, uint8_t max, const char* what) {
    uint8_t raw = 0;
    if (!c_.ReadU8(&raw)) return Missing(what);
    if (raw < min || raw > max) return Error(StrFormat("unknown %s %u", what, raw));
    *v = E(raw);
    return OkStatus();
  }
  Status U64(uint64_t* v, const char* what) { return c_.ReadU64(v) ? OkStatus() : Missing(what); }
  Status Varint(uint64_t* v, const char* what) {
    return c_.ReadVarint(v) ? OkStatus() : Missing(what);
  }
  Status U32(uint32_t* v, const char* what) {
    uint64_t x = 0;
    RETURN_IF_ERROR(Varint(&x, what));
    if (x > UINT32_MAX)
      return Error(
          StrFormat("%s %llu does not fit 32 bits", what, static_cast<unsigned long long>(x)));
    *v = uint32_t(x);
    return OkStatus();
  }
  Status String(std::string* s, const char* what) {
    std::string_view v;
    if (!c_.ReadString(&v)) return Missing(what);
    s->assign(v);
    return OkStatus();
  }
  Status Bytes(uint64_t n, const uint8_t** out, const char* what) {
    if (n > c_.remaining())
      return Error(StrFormat("%s: %llu bytes declared, %zu remain", what,
                             static_cast<unsigned long long>(n), c_.remaining()));
    c_.ReadBytes(size_t(n), out);
    return OkStatus();
  }
  Status Version() {
    uint8_t v = 0;
    RETURN_IF_ERROR(U8(&v, "version"));
    if (v != kPayloadVersion)
      return Status(StatusCode::kUnimplemented,
                    StrFormat("%s chunk at byte %llu: payload version %u; this build reads %u: "
                              "upgrade TraceSmith",
                              PayloadChunkName(type_), static_cast<unsigned long long>(offset_), v,
                              kPayloadVersion));
    return OkStatus();
  }
  Status End() {
    return c_.empty() ? OkStatus() : Error(StrFormat("%zu trailing bytes", c_.remaining()));
  }
  size_t remaining() const { return c_.remaining(); }

 private:
  Status Missing(const char* what) const { return Error(std::string(what) + " truncated"); }
  uint16_t type_;
  ByteCursor c_;
  uint64_t offset_;
};

Status ParseBlobPiece(FieldReader& f, ReplayCapture* out) {
  uint64_t hash = 0, total = 0, offset = 0, len = 0;
  RETURN_IF_ERROR(f.U64(&hash, "hash"));
  RETURN_IF_ERROR(f.Varint(&total, "total size"));
  RETURN_IF_ERROR(f.Varint(&offset, "piece offset"));
  RETURN_IF_ERROR(f.Varint(&len, "piece length"));
  if (total > kMaxBlobBytes)
    return f.Error(StrFormat("blob of %llu bytes exceeds the %llu-byte limit",
                             static_cast<unsigned long long>(total),
                             static_cast<unsigned long long>(kMaxBlobBytes)));
  if (len > kBlobPieceBytes || offset > total || len > total - offset)
    return f.Error(StrFormat("piece [%llu, +%llu) does not fit a %llu-byte blob",
                             static_cast<unsigned long long>(offset),
                             static_cast<unsigned long long>(len),
                             static_cast<unsigned long long>(total)));
  const uint8_t* data = nullptr;
  RETURN_IF_ERROR(f.Bytes(len, &data, "piece bytes"));
  RETURN_IF_ERROR(f.End());
  auto [it, fresh] = out->blobs.try_emplace(hash);
  ReplayCapture::Blob& b = it->second;
  if (fresh) {
    b.total = total;
    // What this piece brings, not what `total` claims: a forged total must
    // not make a few bytes of file reserve megabytes.
    b.data.reserve(size_t(len));
  } else if (b.total != total) {
    return f.Error(StrFormat("blob 0x%016llx declared as %llu bytes, earlier as %llu",
                             static_cast<unsigned long long>(hash),
                             static_cast<unsigned long long>(total),
                             static_cast<unsigned long long>(b.total)));
  } else if (b.complete()) {
    return OkStatus();  // the same content written twice (two writers): harmless
  }
  // Pieces arrive in order, so a hostile total never allocates more than the
  // bytes actually present in the file.
  if (offset != b.data.size())
    return f.Error(StrFormat("blob 0x%016llx: piece at offset %llu, expected %zu",
                             static_cast<unsigned long long>(hash),
                             static_cast<unsigned long long>(offset), b.data.size()));
  b.data.insert(b.data.end(), data, data + len);
  if (b.complete() && ContentHash(b.data) != hash)
    return f.Error(StrFormat("blob 0x%016llx: content does not match its hash",
                             static_cast<unsigned long long>(hash)));
  return OkStatus();
}

// module_hash, function, grid/block/cluster, dynamic shared memory.
Status ParseKernelHead(FieldReader& f, LaunchRecord* l) {
  RETURN_IF_ERROR(f.U64(&l->module_hash, "module hash"));
  RETURN_IF_ERROR(f.String(&l->function, "function name"));
  for (uint32_t* v : {l->grid, l->block, l->cluster})
    for (int k = 0; k < 3; ++k) RETURN_IF_ERROR(f.U32(&v[k], "launch dimension"));
  return f.U32(&l->dynamic_shared_bytes, "dynamic shared memory");
}

// Parameter layout and buffer; each parameter must lie inside the buffer.
Status ParseParams(FieldReader& f, LaunchRecord* l) {
  uint64_t count = 0;
  RETURN_IF_ERROR(f.Varint(&count, "parameter count"));
  if (count > kMaxParams || count > f.remaining() / 2)
    return f.Error(StrFormat("parameter count %llu exceeds the limit or the chunk",
                             static_cast<unsigned long long>(count)));
  l->param_info.resize(size_t(count));
  for (ParamInfo& p : l->param_info) {
    RETURN_IF_ERROR(f.U32(&p.offset, "parameter offset"));
    RETURN_IF_ERROR(f.U32(&p.size, "parameter size"));
  }
  uint64_t len = 0;
  const uint8_t* data = nullptr;
  RETURN_IF_ERROR(f.Varint(&len, "parameter buffer length"));
  if (len > kMaxParamBytes)
    return f.Error(StrFormat("parameter buffer of %llu bytes exceeds %u",
                             static_cast<unsigned long long>(len), kMaxParamBytes));
  RETURN_IF_ERROR(f.Bytes(len, &data, "parameter buffer"));
  for (size_t k = 0; k < l->param_info.size(); ++k) {
    const ParamInfo& p = l->param_info[k];
    if (uint64_t(p.offset) + p.size > len)
      return f.Error(
          StrFormat("parameter %zu (offset %u, size %u) exceeds the %llu-byte "
                    "parameter buffer",
                    k, p.offset, p.size, static_cast<unsigned long long>(len)));
  }
  l->params.assign(data, data + len);
  return OkStatus();
}

Status ParseAttributes(FieldReader& f, std::vector<LaunchAttribute>* out) {
  uint64_t n = 0;
  RETURN_IF_ERROR(f.Varint(&n, "launch attribute count"));
  if (n > kMaxLaunchAttributes)
    return f.Error(StrFormat("%llu launch attributes (at most %u)",
                             static_cast<unsigned long long>(n), kMaxLaunchAttributes));
  out->resize(size_t(n));
  for (LaunchAttribute& a : *out) {
    uint64_t size = 0;
    const uint8_t* bytes = nullptr;
    RETURN_IF_ERROR(f.U32(&a.id, "launch attribute id"));
    RETURN_IF_ERROR(f.Varint(&size, "launch attribute size"));
    if (size > kMaxLaunchAttributeBytes)
      return f.Error(StrFormat("launch attribute %u of %llu bytes (at most %u)", a.id,
                               static_cast<unsigned long long>(size), kMaxLaunchAttributeBytes));
    RETURN_IF_ERROR(f.Bytes(size, &bytes, "launch attribute value"));
    a.value.assign(bytes, bytes + size);
  }
  return OkStatus();
}

Status ParseCoverage(FieldReader& f, MemoryCoverage* c) {
  RETURN_IF_ERROR(f.Enum(&c->scope, 0, kMaxMemoryScope, "memory scope"));
  RETURN_IF_ERROR(f.U32(&c->ranges_over_budget, "ranges over the budget"));
  RETURN_IF_ERROR(f.Varint(&c->bytes_over_budget, "bytes over the budget"));
  RETURN_IF_ERROR(f.U32(&c->ranges_past_depth, "ranges past the depth limit"));
  return f.Varint(&c->words_unresolved, "unresolved words");
}

// [address, address + size) without wrapping, at most kMaxBlobBytes.
bool ValidSpan(DeviceSpan s) { return s.size <= kMaxBlobBytes && s.address + s.size >= s.address; }

Status ParseGraphLaunch(FieldReader& f, ReplayCapture* out) {
  GraphLaunchRecord g;
  RETURN_IF_ERROR(f.Varint(&g.index, "launch index"));
  RETURN_IF_ERROR(f.U32(&g.correlation_id, "correlation id"));
  RETURN_IF_ERROR(f.U32(&g.stream_id, "stream id"));
  RETURN_IF_ERROR(f.Varint(&g.recorded_ns, "recorded time"));
  RETURN_IF_ERROR(f.U32(&g.snapshot_ranges, "snapshot range count"));
  RETURN_IF_ERROR(ParseCoverage(f, &g.coverage));
  uint64_t count = 0;
  RETURN_IF_ERROR(f.Varint(&count, "node count"));
  // Each node takes at least 2 bytes (kind, dependency count).
  if (count > kMaxGraphNodes || count > f.remaining() / 2)
    return f.Error(StrFormat("node count %llu exceeds the limit (%u) or the chunk",
                             static_cast<unsigned long long>(count), kMaxGraphNodes));
  g.nodes.resize(size_t(count));
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    GraphNodeRecord& n = g.nodes[k];
    RETURN_IF_ERROR(f.Enum(&n.kind, 1, kMaxGraphNodeKind, "graph node kind"));
    uint64_t deps = 0;
    RETURN_IF_ERROR(f.Varint(&deps, "dependency count"));
    if (deps > k || deps > f.remaining())
      return f.Error(StrFormat("node %zu: %llu dependencies (only %zu earlier nodes)", k,
                               static_cast<unsigned long long>(deps), k));
    n.dependencies.resize(size_t(deps));
    for (uint32_t& d : n.dependencies) {
      RETURN_IF_ERROR(f.U32(&d, "dependency"));
      if (d >= k)
        return f.Error(StrFormat("node %zu depends on node %u, not an earlier one", k, d));
    }
    switch (n.kind) {
      case GraphNodeKind::kKernel:
        RETURN_IF_ERROR(ParseKernelHead(f, &n.kernel));
        RETURN_IF_ERROR(ParseParams(f, &n.kernel));
        RETURN_IF_ERROR(ParseAttributes(f, &n.kernel.attributes));
        n.kernel.index = g.index;
        n.kernel.correlation_id = g.correlation_id;
        n.kernel.stream_id = g.stream_id;
        break;
      case GraphNodeKind::kMemset:
        RETURN_IF_ERROR(f.U64(&n.dst, "memset destination"));
        RETURN_IF_ERROR(f.Varint(&n.dst_pitch, "memset pitch"));
        RETURN_IF_ERROR(f.U32(&n.value, "memset value"));
        RETURN_IF_ERROR(f.U8(&n.element_size, "memset element size"));
        RETURN_IF_ERROR(f.Varint(&n.width, "memset width"));
        RETURN_IF_ERROR(f.Varint(&n.height, "memset height"));
        if (n.element_size != 1 && n.element_size != 2 && n.element_size != 4)
          return f.Error(
              StrFormat("node %zu: memset element size %u (1, 2 or 4)", k, n.element_size));
        break;
      case GraphNodeKind::kMemcpy:
        RETURN_IF_ERROR(f.U64(&n.dst, "memcpy destination"));
        RETURN_IF_ERROR(f.U64(&n.src, "memcpy source"));
        RETURN_IF_ERROR(f.Varint(&n.dst_pitch, "memcpy destination pitch"));
        RETURN_IF_ERROR(f.Varint(&n.src_pitch, "memcpy source pitch"));
        RETURN_IF_ERROR(f.Varint(&n.width, "memcpy width"));
        RETURN_IF_ERROR(f.Varint(&n.height, "memcpy height"));
        break;
      case GraphNodeKind::kEmpty:
        break;
    }
    if (n.kind == GraphNodeKind::kMemset || n.kind == GraphNodeKind::kMemcpy) {
      // Rows and pitches small enough that the spans below cannot overflow.
      const uint64_t row_bytes = n.width * (n.kind == GraphNodeKind::kMemset ? n.element_size : 1);
      if (n.width > kMaxBlobBytes || n.height > kMaxBlobBytes || n.dst_pitch > kMaxBlobBytes ||
          n.src_pitch > kMaxBlobBytes ||
          (n.height > 1 && (n.dst_pitch < row_bytes ||
                            (n.kind == GraphNodeKind::kMemcpy && n.src_pitch < n.width))) ||
          !ValidSpan(n.Written()) || !ValidSpan(n.Read()))
        return f.Error(StrFormat(
            "node %zu: %s of %llu x %llu is not a valid device range", k, GraphNodeKindName(n.kind),
            static_cast<unsigned long long>(n.width), static_cast<unsigned long long>(n.height)));
    }
  }
  RETURN_IF_ERROR(f.End());
  out->graphs.push_back(std::move(g));
  return OkStatus();
}

}  // namespace

Status ParsePayloadChunk(uint16_t type, std::span<const uint8_t> payload, uint64_t offset,
                         ReplayCapture* out) {
  FieldReader f(type, payload, offset);
  switch (static_cast<PayloadChunk>(type)) {
    case PayloadChunk::kCaptureInfo: {
      RETURN_IF_ERROR(f.Version());
      CaptureInfo i;
      RETURN_IF_ERROR(f.String(&i.device_name, "device name"));
      RETURN_IF_ERROR(f.U32(&i.cc_major, "compute capability major"));
      RETURN_IF_ERROR(f.U32(&i.cc_minor, "compute capability minor"));
      RETURN_IF_ERROR(f.U32(&i.driver_version, "driver version"));
      RETURN_IF_ERROR(f.String(&i.tool, "tool"));
      RETURN_IF_ERROR(f.End());
      out->info = std::move(i);
      out->has_info = true;
      return OkStatus();
    }
    case PayloadChunk::kBlobPiece:
      RETURN_IF_ERROR(f.Version());
      return ParseBlobPiece(f, out);
    case PayloadChunk::kModule: {
      RETURN_IF_ERROR(f.Version());
      ModuleRecord m;
      RETURN_IF_ERROR(f.U64(&m.hash, "module hash"));
      RETURN_IF_ERROR(f.Enum(&m.kind, 0, uint8_t(ImageKind::kPtx), "image kind"));
      RETURN_IF_ERROR(f.String(&m.name, "module name"));
      RETURN_IF_ERROR(f.End());
      out->modules.push_back(std::move(m));
      return OkStatus();
    }
    case PayloadChunk::kLaunch: {
      RETURN_IF_ERROR(f.Version());
      LaunchRecord l;
      RETURN_IF_ERROR(f.Varint(&l.index, "launch index"));
      RETURN_IF_ERROR(ParseKernelHead(f, &l));
      RETURN_IF_ERROR(f.U32(&l.stream_id, "stream id"));
      RETURN_IF_ERROR(f.Varint(&l.recorded_ns, "recorded time"));
      RETURN_IF_ERROR(f.U32(&l.snapshot_ranges, "snapshot range count"));
      RETURN_IF_ERROR(ParseParams(f, &l));
      if (f.remaining() > 0) RETURN_IF_ERROR(f.U32(&l.correlation_id, "correlation id"));
      if (f.remaining() > 0) RETURN_IF_ERROR(ParseAttributes(f, &l.attributes));
      if (f.remaining() > 0) RETURN_IF_ERROR(ParseCoverage(f, &l.coverage));
      RETURN_IF_ERROR(f.End());
      out->launches.push_back(std::move(l));
      return OkStatus();
    }
    case PayloadChunk::kGraphLaunch:
      RETURN_IF_ERROR(f.Version());
      return ParseGraphLaunch(f, out);
    case PayloadChunk::kSnapshot: {
      RETURN_IF_ERROR(f.Version());
      SnapshotRecord s;
      RETURN_IF_ERROR(f.Varint(&s.launch_index, "launch index"));
      RETURN_IF_ERROR(f.Enum(&s.phase, 0, 1, "snapshot phase"));
      RETURN_IF_ERROR(f.U64(&s.address, "device address"));
      RETURN_IF_ERROR(f.Varint(&s.size, "size"));
      RETURN_IF_ERROR(f.U64(&s.hash, "content hash"));
      if (f.remaining() > 0) {
        SnapshotOrigin& o = s.origin;
        RETURN_IF_ERROR(f.Enum(&o.source, 0, kMaxRangeSource, "range source"));
        RETURN_IF_ERROR(f.U64(&o.via, "pointer range address"));
        RETURN_IF_ERROR(f.Varint(&o.first_offset, "first pointer offset"));
        RETURN_IF_ERROR(f.Varint(&o.last_offset, "last pointer offset"));
        RETURN_IF_ERROR(f.Varint(&o.pointers, "pointer count"));
        RETURN_IF_ERROR(f.U32(&o.depth, "pointer depth"));
      }
      RETURN_IF_ERROR(f.End());
      if (s.size > kMaxBlobBytes || s.address + s.size < s.address)
        return f.Error(StrFormat("range 0x%llx + %llu is not a valid device range",
                                 static_cast<unsigned long long>(s.address),
                                 static_cast<unsigned long long>(s.size)));
      out->snapshots.push_back(s);
      return OkStatus();
    }
    case PayloadChunk::kStreamOp: {
      RETURN_IF_ERROR(f.Version());
      StreamOpRecord op;
      uint64_t value = 0;
      RETURN_IF_ERROR(f.Varint(&op.before_launch, "launch index"));
      RETURN_IF_ERROR(f.Varint(&op.seq, "sequence number"));
      RETURN_IF_ERROR(f.Enum(&op.kind, 1, kMaxStreamOpKind, "stream op kind"));
      RETURN_IF_ERROR(f.U32(&op.stream, "stream id"));
      RETURN_IF_ERROR(f.U32(&op.event, "event id"));
      RETURN_IF_ERROR(f.U32(&op.flags, "flags"));
      RETURN_IF_ERROR(f.U64(&op.dst, "destination address"));
      RETURN_IF_ERROR(f.U64(&op.src, "source address"));
      RETURN_IF_ERROR(f.Varint(&op.bytes, "byte count"));
      RETURN_IF_ERROR(f.U64(&value, "value"));
      RETURN_IF_ERROR(f.U8(&op.element_size, "element size"));
      RETURN_IF_ERROR(f.U64(&op.data_hash, "data hash"));
      RETURN_IF_ERROR(f.End());
      op.value = int64_t(value);
      if (op.bytes > kMaxBlobBytes || op.dst + op.bytes < op.dst || op.src + op.bytes < op.src)
        return f.Error(StrFormat("%s of %llu bytes is not a valid device range",
                                 StreamOpKindName(op.kind),
                                 static_cast<unsigned long long>(op.bytes)));
      if (op.kind == StreamOpKind::kMemset &&
          (op.element_size != 1 && op.element_size != 2 && op.element_size != 4))
        return f.Error(StrFormat("memset element size %u (1, 2 or 4)", op.element_size));
      out->stream_ops.push_back(op);
      return OkStatus();
    }
  }
  // A newer writer's payload type: skip, as readers skip unknown chunks.
  return OkStatus();
}

}  // namespace tracesmith::format
