// PerfettoTrackWriter: the track and packet layer of the Perfetto exporter.
//
// Layout of the output (docs/export.md has the full picture):
// - Sequence 1 carries only TrackDescriptors (no timestamps, no interning),
//   each written before the first packet that uses its uuid.
// - Every track that holds events ("lane") has its own packet sequence. Its
//   first packet clears incremental state, sets TracePacketDefaults (the
//   lane's track uuid and clock 64) and a ClockSnapshot defining clock 64 as
//   an incremental nanosecond clock. Event packets then carry only a small
//   timestamp delta and no track uuid: this is what keeps a kernel slice
//   (BEGIN + END) near 35 bytes.
// - Names, annotation names and launch-configuration strings are interned
//   per sequence (InternedData in the packet that first uses them).
// - A group (a host thread, a GPU stream, ...) starts with one lane. A slice
//   that would not nest on any existing lane of its group (or arrives before
//   the lane's last timestamp) opens another lane: strict BEGIN/END nesting
//   and monotonic timestamps per sequence hold by construction.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "output_file.h"
#include "proto_encoder.h"
#include "tracesmith/model/string_table.h"

namespace tracesmith::exporter {

// Field numbers from perfetto_trace.proto (tests decode with that schema).
namespace pf {
inline constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
inline constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                          kSequenceFlags = 13, kClockSnapshot = 6, kTrackDescriptor = 60,
                          kTracePacketDefaults = 59, kTimestampClockId = 58;
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;
// TrackEvent
inline constexpr uint32_t kTeDebugAnnotations = 4, kTeType = 9, kTeNameIid = 10,
                          kTeCounterValue = 30, kTeFlowIdsOld = 36, kTeTerminatingFlowIdsOld = 42,
                          kTeDoubleCounterValue = 44, kTeCorrelationId = 52, kTeCallstackIid = 56;
inline constexpr uint32_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeInstant = 3,
                          kTypeCounter = 4;
// DebugAnnotation
inline constexpr uint32_t kDaNameIid = 1, kDaBool = 2, kDaUint = 3, kDaInt = 4, kDaDouble = 5,
                          kDaString = 6, kDaStringIid = 17;
// InternedData
inline constexpr uint32_t kIdEventNames = 2, kIdDebugAnnotationNames = 3, kIdFunctionNames = 5,
                          kIdFrames = 6, kIdCallstacks = 7, kIdSourcePaths = 18,
                          kIdMappingPaths = 17, kIdMappings = 19,
                          kIdDebugAnnotationStringValues = 29;
// Incremental clock used by every lane (64..127 are sequence-scoped ids).
inline constexpr uint32_t kIncrementalClock = 64;
inline constexpr uint32_t kBootTimeClock = 6;
}  // namespace pf

// A one-byte tag (field numbers below 16), as a constant.
template <uint32_t kField, uint32_t kWireType>
inline constexpr uint8_t kTag = [] {
  static_assert(kField < 16, "one-byte tags only");
  return static_cast<uint8_t>((kField << 3) | kWireType);
}();

// Names used by the exporter itself (not from the trace): id space disjoint
// from trace string ids by the high bit.
inline constexpr uint32_t kLocalNameBit = 1u << 31;

// One Perfetto track's packet sequence and what is open on it (slices,
// interned names); a track group has one per overlap level. Not analysis's
// Lane (a stream or thread of the trace).
struct TrackLane {
  uint64_t uuid = 0;
  uint32_t seq = 0;
  uint64_t last_ts = 0;
  bool started = false;  // incremental state + clock written
  // The packet's trusted_packet_sequence_id field (tag + varint), encoded
  // once: every packet of the lane ends with it.
  uint8_t seq_field_size = 0;
  ProtoByte seq_field[8] = {};
  std::vector<uint64_t> open;  // end times of open slices, innermost last
  // Per-sequence interning: key -> iid. Event names that are trace string
  // ids below kFlatNameKeys: a flat array by id (exact, one load); other
  // keys: a tiny direct-mapped cache in front of the map.
  std::vector<uint32_t> flat_names;
  std::unordered_map<uint32_t, uint32_t> names, annotation_names;
  std::unordered_map<uint64_t, uint32_t> strings;  // annotation string values by key
  std::unordered_set<uint32_t> stacks, frames, functions, files, mappings;
  uint32_t next_name_iid = 1, next_annotation_iid = 1, next_string_iid = 1, next_misc_iid = 1;
  std::array<std::pair<uint32_t, uint32_t>, 64> name_cache{};
  std::array<std::pair<uint64_t, uint32_t>, 64> string_cache{};
  std::array<std::pair<uint32_t, uint32_t>, 16> annotation_cache{};
};

// A set of lanes that show one thing (a thread's calls, a stream's work).
struct TrackGroup {
  uint64_t parent_uuid = 0;  // where extra lanes hang
  std::string name;
  bool is_thread = false;
  int32_t pid = 0;
  int64_t tid = 0;
  std::vector<TrackLane*> lanes;
};

class PerfettoTrackWriter {
 public:
  explicit PerfettoTrackWriter(OutputFile* out) : out_(out) {}

  uint64_t NewUuid() { return next_uuid_++; }
  // Every lane's clock starts here (the trace's earliest timestamp).
  void SetBaseTime(uint64_t ts) { base_ts_ = ts; }
  // Descriptors (sequence 1). `name` may be empty for thread/process tracks.
  void DescribeProcess(uint64_t uuid, int32_t pid, std::string_view name);
  void DescribeThread(uint64_t uuid, int32_t pid, int64_t tid, std::string_view name);
  void DescribeTrack(uint64_t uuid, uint64_t parent_uuid, std::string_view name);
  // A counter track; bytes_unit: its values are bytes; else unit_name, when
  // given, is the unit the UI shows, and tracks with one y_axis_share_key
  // under one parent share their y-axis range.
  void DescribeCounter(uint64_t uuid, uint64_t parent_uuid, std::string_view name, bool bytes_unit,
                       std::string_view unit_name = {}, std::string_view y_axis_share_key = {});

  // The first lane of a group uses `uuid` (already described).
  TrackLane* NewLane(uint64_t uuid);
  // Finds a lane where [s, e] nests (or creates one, described under the
  // group's parent). Pops and writes the ENDs that precede s on that lane.
  // Inline: nearly every slice nests on its group's first lane.
  [[gnu::always_inline]] TrackLane* LaneFor(TrackGroup* g, uint64_t s, uint64_t e) {
    TrackLane* lane = g->lanes[0];
    if (Nests(lane, s, e)) [[likely]] {
      CloseUntil(lane, s);
      return lane;
    }
    return OtherLaneFor(g, s, e);
  }
  // For instants and counters: a lane whose last timestamp is <= ts.
  TrackLane* InstantLaneFor(TrackGroup* g, uint64_t ts);

  // Packet writing: Begin*Event opens a TracePacket + TrackEvent on `lane`
  // at `ts`; the caller adds fields through enc() and annotation helpers,
  // then calls EndEvent. Interned entries requested in between are written
  // into the same packet.
  [[gnu::always_inline]] inline void BeginEvent(TrackLane* lane, uint64_t ts, uint32_t type,
                                                uint32_t name_key);
  [[gnu::always_inline]] inline void EndEvent();
  // Writes END packets for every open slice of `lane` ending at or before `ts`.
  void CloseUntil(TrackLane* lane, uint64_t ts) {
    while (!lane->open.empty() && lane->open.back() <= ts) {
      uint64_t end = lane->open.back();
      lane->open.pop_back();
      WriteSliceEnd(lane, end);
    }
  }
  void CloseAll(TrackLane* lane) { CloseUntil(lane, UINT64_MAX); }

  // Annotation helpers (inside BeginEvent/EndEvent).
  [[gnu::always_inline]] inline void AnnotateUint(uint32_t name_key, uint64_t v);
  void AnnotateInt(uint32_t name_key, int64_t v);
  void AnnotateDouble(uint32_t name_key, double v);
  // A string value written in place (not interned): for values that rarely
  // repeat, such as an allocation's address.
  void AnnotateString(uint32_t name_key, std::string_view v);
  // A string value interned per sequence under `value_key` (an exact key
  // chosen by the caller); make() builds the text only the first time.
  template <typename MakeString>
  void AnnotateInternedString(uint32_t name_key, uint64_t value_key, MakeString&& make) {
    const uint32_t name_iid = AnnotationNameIid(name_key);  // interned first
    auto& slot = cur_->string_cache[(value_key ^ (value_key >> 7)) & 63];
    uint32_t iid = slot.second;
    if (iid == 0 || slot.first != value_key) {
      auto [it, inserted] = cur_->strings.try_emplace(value_key, cur_->next_string_iid);
      if (inserted) {
        ++cur_->next_string_iid;
        size_t n = interned_.BeginNested(pf::kIdDebugAnnotationStringValues);
        interned_.Varint(1, it->second);
        interned_.String(2, make());
        interned_.EndNested(n);
      }
      iid = it->second;
      slot = {value_key, iid};
    }
    ProtoByte* p = BeginAnnotation(name_iid);
    p = ProtoEncoder::EncodeVarintTo((pf::kDaStringIid << 3) | ProtoEncoder::kVarint, p);
    EndAnnotation(ProtoEncoder::EncodeVarintTo(iid, p));
  }
  ProtoEncoder& enc() { return enc_; }
  TrackLane* current_lane() { return cur_; }

  // Interning of stack pieces for the current event: true when new.
  bool InternStack(uint32_t id) { return cur_->stacks.insert(id).second; }
  bool InternFrame(uint32_t id) { return cur_->frames.insert(id).second; }
  bool InternFunction(uint32_t id) { return cur_->functions.insert(id).second; }
  bool InternFile(uint32_t id) { return cur_->files.insert(id).second; }
  bool InternMapping(uint32_t id) { return cur_->mappings.insert(id).second; }
  // The packet's InternedData, for stack entries (opened on demand).
  ProtoEncoder& interned() { return interned_; }

  // Resolves a name key to its text (trace strings or local names).
  void SetTraceStrings(const model::StringTable* s) { trace_strings_ = s; }
  uint32_t LocalName(std::string_view s) { return kLocalNameBit | local_.Intern(s); }
  std::string_view NameText(uint32_t key) const {
    return key & kLocalNameBit ? local_.Get(key & ~kLocalNameBit) : trace_strings_->Get(key);
  }

  // Flushes buffered packets to the file when enough have accumulated.
  void MaybeFlush() {
    if (enc_.size() >= kFlushBytes) Flush();
  }
  void Flush();
  uint64_t bytes_encoded() const { return flushed_ + enc_.size(); }
  uint64_t extra_lanes() const { return extra_lanes_; }

 private:
  static constexpr size_t kFlushBytes = 256 << 10;
  // 16 Ki ids: at most 64 KiB of name slots per lane.
  static constexpr uint32_t kFlatNameKeys = 16 << 10;
  void InternName(uint32_t iid, uint32_t key);
  [[gnu::always_inline]] inline void WriteSliceEnd(TrackLane* lane, uint64_t ts);
  // An annotation's tag, length placeholder and name iid; EndAnnotation
  // sets the length and commits. Bodies are always under 128 bytes.
  [[gnu::always_inline]] inline ProtoByte* BeginAnnotation(uint32_t name_iid);
  void EndAnnotation(ProtoByte* end) {
    annotation_start_[1] = static_cast<ProtoByte>(end - annotation_start_ - 2);
    enc_.CommitRaw(end);
  }
  ProtoByte* annotation_start_ = nullptr;
  void StartLane(TrackLane* lane);
  // True when [s, e] can open on `lane`: not before its last timestamp, and
  // inside the innermost open slice that is still open at s.
  static bool Nests(const TrackLane* lane, uint64_t s, uint64_t e) {
    if (s < lane->last_ts) return false;
    size_t depth = lane->open.size();
    while (depth > 0 && lane->open[depth - 1] <= s) --depth;
    return depth == 0 || e <= lane->open[depth - 1];
  }
  TrackLane* OtherLaneFor(TrackGroup* g, uint64_t s, uint64_t e);
  // Flat array for small trace string ids (the hot case), else the slow path.
  uint32_t NameIid(TrackLane* lane, uint32_t key) {
    if (key < lane->flat_names.size()) [[likely]] {
      if (uint32_t iid = lane->flat_names[key]; iid != 0) [[likely]]
        return iid;
    }
    return NewNameIid(lane, key);
  }
  uint32_t NewNameIid(TrackLane* lane, uint32_t key);
  uint32_t AnnotationNameIid(uint32_t key) {
    const auto& slot = cur_->annotation_cache[key & 15];
    if (slot.second != 0 && slot.first == key) [[likely]]
      return slot.second;
    return NewAnnotationNameIid(key);
  }
  uint32_t NewAnnotationNameIid(uint32_t key);

  OutputFile* out_;
  ProtoEncoder enc_;       // packets, framed as Trace.packet
  ProtoEncoder interned_;  // the current packet's InternedData body
  const model::StringTable* trace_strings_ = nullptr;
  model::StringTable local_;
  std::deque<TrackLane> lanes_;
  TrackLane* cur_ = nullptr;
  size_t packet_token_ = 0, event_token_ = 0;
  uint64_t next_uuid_ = 1;
  uint64_t base_ts_ = 0;
  uint32_t next_seq_ = 2;  // 1 = descriptors
  uint64_t flushed_ = 0;
  uint64_t extra_lanes_ = 0;
};

// BeginEvent/EndEvent write what BeginNested/Varint/EndNested would, with
// one reservation each and the tags as constants: every event goes through
// here, so they are inline.
inline void PerfettoTrackWriter::BeginEvent(TrackLane* lane, uint64_t ts, uint32_t type,
                                            uint32_t name_key) {
  if (!lane->started) [[unlikely]]
    StartLane(lane);
  cur_ = lane;
  interned_.Clear();
  const uint32_t name_iid = name_key != 0 ? NameIid(lane, name_key) : 0;  // may intern
  ProtoByte* const start = enc_.BeginRaw(40);
  ProtoByte* p = start;
  *p++ = kTag<pf::kTracePacket, ProtoEncoder::kLengthDelimited>;
  *p++ = 0;  // length, patched by EndEvent
  packet_token_ = enc_.size() + static_cast<size_t>(p - start);
  *p++ = kTag<pf::kTimestamp, ProtoEncoder::kVarint>;
  p = ProtoEncoder::EncodeVarintTo(ts - lane->last_ts, p);
  lane->last_ts = ts;
  *p++ = kTag<pf::kTrackEvent, ProtoEncoder::kLengthDelimited>;
  *p++ = 0;
  event_token_ = enc_.size() + static_cast<size_t>(p - start);
  *p++ = kTag<pf::kTeType, ProtoEncoder::kVarint>;
  *p++ = static_cast<ProtoByte>(type);  // a TrackEvent.Type: one byte
  if (name_iid != 0) {
    *p++ = kTag<pf::kTeNameIid, ProtoEncoder::kVarint>;
    p = ProtoEncoder::EncodeVarintTo(name_iid, p);
  }
  enc_.CommitRaw(p);
}

inline void PerfettoTrackWriter::EndEvent() {
  enc_.EndNested(event_token_);
  if (interned_.size() > 0) [[unlikely]]
    enc_.Bytes(pf::kInternedData, interned_.data(), interned_.size());
  ProtoByte* p = enc_.BeginRaw(sizeof cur_->seq_field);
  std::memcpy(p, cur_->seq_field, sizeof cur_->seq_field);
  enc_.CommitRaw(p + cur_->seq_field_size);
  enc_.EndNested(packet_token_);
}

// The bytes BeginEvent(lane, ts, kTypeSliceEnd, 0) + EndEvent() write,
// assembled in one reservation: half of all packets are slice ENDs.
inline void PerfettoTrackWriter::WriteSliceEnd(TrackLane* lane, uint64_t ts) {
  if (!lane->started) [[unlikely]]
    StartLane(lane);
  cur_ = lane;
  interned_.Clear();
  constexpr uint8_t kPacketTag = kTag<pf::kTracePacket, ProtoEncoder::kLengthDelimited>;
  constexpr uint8_t kTimestampTag = kTag<pf::kTimestamp, ProtoEncoder::kVarint>;
  constexpr uint8_t kTrackEventTag = kTag<pf::kTrackEvent, ProtoEncoder::kLengthDelimited>;
  constexpr uint8_t kTypeTag = kTag<pf::kTeType, ProtoEncoder::kVarint>;
  // 2 (packet tag, length) + 1 + 10 (timestamp) + 4 (track event) + 8
  // (sequence id field): the packet body is under 128 bytes, one length byte.
  ProtoByte* const start = enc_.BeginRaw(32);
  ProtoByte* p = start + 2;
  *p++ = kTimestampTag;
  p = ProtoEncoder::EncodeVarintTo(ts - lane->last_ts, p);
  *p++ = kTrackEventTag;
  *p++ = 2;
  *p++ = kTypeTag;
  *p++ = pf::kTypeSliceEnd;
  std::memcpy(p, lane->seq_field, sizeof lane->seq_field);
  p += lane->seq_field_size;
  lane->last_ts = ts;
  start[0] = kPacketTag;
  start[1] = static_cast<ProtoByte>(p - start - 2);
  enc_.CommitRaw(p);
}

// A debug annotation {name_iid, value} is at most 1 + 5 + 2 + 10 bytes:
// written in one reservation with a one-byte length.
inline ProtoByte* PerfettoTrackWriter::BeginAnnotation(uint32_t name_iid) {
  annotation_start_ = enc_.BeginRaw(32);
  ProtoByte* p = annotation_start_;
  *p++ = kTag<pf::kTeDebugAnnotations, ProtoEncoder::kLengthDelimited>;
  *p++ = 0;
  *p++ = kTag<pf::kDaNameIid, ProtoEncoder::kVarint>;
  return ProtoEncoder::EncodeVarintTo(name_iid, p);
}

inline void PerfettoTrackWriter::AnnotateUint(uint32_t name_key, uint64_t v) {
  ProtoByte* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaUint, ProtoEncoder::kVarint>;
  EndAnnotation(ProtoEncoder::EncodeVarintTo(v, p));
}

}  // namespace tracesmith::exporter
