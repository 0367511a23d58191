#include "perfetto_tracks.h"

#include <cstring>

namespace tracesmith::exporter {

void PerfettoTrackWriter::DescribeProcess(uint64_t uuid, int32_t pid, std::string_view name) {
  size_t p = enc_.BeginNested(pf::kTracePacket);
  size_t td = enc_.BeginNested(pf::kTrackDescriptor);
  enc_.Varint(1, uuid);
  size_t pd = enc_.BeginNested(3);  // ProcessDescriptor
  enc_.Int(1, pid);
  if (!name.empty()) enc_.String(6, name);
  enc_.EndNested(pd);
  enc_.EndNested(td);
  enc_.Varint(pf::kSequenceId, 1);
  enc_.EndNested(p);
}

void PerfettoTrackWriter::DescribeThread(uint64_t uuid, int32_t pid, int64_t tid,
                                         std::string_view name) {
  size_t p = enc_.BeginNested(pf::kTracePacket);
  size_t td = enc_.BeginNested(pf::kTrackDescriptor);
  enc_.Varint(1, uuid);
  size_t th = enc_.BeginNested(4);  // ThreadDescriptor
  enc_.Int(1, pid);
  enc_.Int(2, tid);
  if (!name.empty()) enc_.String(5, name);
  enc_.EndNested(th);
  enc_.EndNested(td);
  enc_.Varint(pf::kSequenceId, 1);
  enc_.EndNested(p);
}

void PerfettoTrackWriter::DescribeTrack(uint64_t uuid, uint64_t parent_uuid,
                                        std::string_view name) {
  size_t p = enc_.BeginNested(pf::kTracePacket);
  size_t td = enc_.BeginNested(pf::kTrackDescriptor);
  enc_.Varint(1, uuid);
  if (parent_uuid != 0) enc_.Varint(5, parent_uuid);
  enc_.String(2, name);
  enc_.EndNested(td);
  enc_.Varint(pf::kSequenceId, 1);
  enc_.EndNested(p);
}

void PerfettoTrackWriter::DescribeCounter(uint64_t uuid, uint64_t parent_uuid,
                                          std::string_view name, bool bytes_unit) {
  size_t p = enc_.BeginNested(pf::kTracePacket);
  size_t td = enc_.BeginNested(pf::kTrackDescriptor);
  enc_.Varint(1, uuid);
  if (parent_uuid != 0) enc_.Varint(5, parent_uuid);
  enc_.String(2, name);
  size_t cd = enc_.BeginNested(8);    // CounterDescriptor
  if (bytes_unit) enc_.Varint(3, 3);  // UNIT_SIZE_BYTES
  enc_.EndNested(cd);
  enc_.EndNested(td);
  enc_.Varint(pf::kSequenceId, 1);
  enc_.EndNested(p);
}

Lane* PerfettoTrackWriter::NewLane(uint64_t uuid) {
  Lane& lane = lanes_.emplace_back();
  lane.uuid = uuid;
  lane.seq = next_seq_++;
  lane.last_ts = base_ts_;
  return &lane;
}

Lane* PerfettoTrackWriter::LaneFor(TrackGroup* g, uint64_t s, uint64_t e) {
  for (Lane* lane : g->lanes) {
    if (s < lane->last_ts) continue;
    size_t depth = lane->open.size();
    while (depth > 0 && lane->open[depth - 1] <= s) --depth;
    if (depth > 0 && e > lane->open[depth - 1]) continue;
    CloseUntil(lane, s);
    return lane;
  }
  uint64_t uuid = NewUuid();
  std::string name = g->name + " #" + std::to_string(g->lanes.size() + 1);
  DescribeTrack(uuid, g->parent_uuid, name);
  Lane* lane = NewLane(uuid);
  g->lanes.push_back(lane);
  ++extra_lanes_;
  return lane;
}

Lane* PerfettoTrackWriter::InstantLaneFor(TrackGroup* g, uint64_t ts) {
  for (Lane* lane : g->lanes) {
    if (ts < lane->last_ts) continue;
    CloseUntil(lane, ts);
    return lane;
  }
  uint64_t uuid = NewUuid();
  DescribeTrack(uuid, g->parent_uuid, g->name + " #" + std::to_string(g->lanes.size() + 1));
  Lane* lane = NewLane(uuid);
  g->lanes.push_back(lane);
  ++extra_lanes_;
  return lane;
}

void PerfettoTrackWriter::StartLane(Lane* lane) {
  // Incremental state, defaults and the lane's clock. Clock 64 is defined
  // equal to BOOTTIME at the trace's base time; every lane uses the same
  // base so BOOTTIME never goes backwards across snapshots.
  size_t p = enc_.BeginNested(pf::kTracePacket);
  enc_.Varint(pf::kSequenceId, lane->seq);
  enc_.Varint(pf::kSequenceFlags, pf::kSeqIncrementalStateCleared);
  size_t d = enc_.BeginNested(pf::kTracePacketDefaults);
  enc_.Varint(pf::kTimestampClockId, pf::kIncrementalClock);
  size_t ted = enc_.BeginNested(11);  // TrackEventDefaults
  enc_.Varint(11, lane->uuid);
  enc_.EndNested(ted);
  enc_.EndNested(d);
  size_t cs = enc_.BeginNested(pf::kClockSnapshot);
  size_t c1 = enc_.BeginNested(1);
  enc_.Varint(1, pf::kIncrementalClock);
  enc_.Varint(2, base_ts_);
  enc_.Bool(3, true);
  enc_.EndNested(c1);
  size_t c2 = enc_.BeginNested(1);
  enc_.Varint(1, pf::kBootTimeClock);
  enc_.Varint(2, base_ts_);
  enc_.EndNested(c2);
  enc_.EndNested(cs);
  enc_.EndNested(p);
  lane->started = true;
  lane->last_ts = base_ts_;
}

uint32_t PerfettoTrackWriter::NameIid(Lane* lane, uint32_t key) {
  if (key < kFlatNameKeys) {
    if (key >= lane->flat_names.size())
      lane->flat_names.resize(std::max<size_t>(key + 1, 2 * lane->flat_names.size()));
    uint32_t& iid = lane->flat_names[key];
    if (iid == 0) {
      iid = lane->next_name_iid++;
      InternName(iid, key);
    }
    return iid;
  }
  auto& slot = lane->name_cache[(key ^ (key >> 16)) & 63];
  if (slot.first == key && slot.second != 0) return slot.second;
  auto [it, inserted] = lane->names.try_emplace(key, lane->next_name_iid);
  if (inserted) {
    ++lane->next_name_iid;
    InternName(it->second, key);
  }
  slot = {key, it->second};
  return it->second;
}

void PerfettoTrackWriter::InternName(uint32_t iid, uint32_t key) {
  size_t n = interned_.BeginNested(pf::kIdEventNames);
  interned_.Varint(1, iid);
  interned_.String(2, NameText(key));
  interned_.EndNested(n);
}

uint32_t PerfettoTrackWriter::AnnotationNameIid(uint32_t key) {
  auto& slot = cur_->annotation_cache[key & 15];
  if (slot.second != 0 && slot.first == key) return slot.second;
  auto [it, inserted] = cur_->annotation_names.try_emplace(key, cur_->next_annotation_iid);
  if (inserted) {
    ++cur_->next_annotation_iid;
    size_t n = interned_.BeginNested(pf::kIdDebugAnnotationNames);
    interned_.Varint(1, it->second);
    interned_.String(2, NameText(key));
    interned_.EndNested(n);
  }
  slot = {key, it->second};
  return it->second;
}

// BeginEvent/EndEvent write what BeginNested/Varint/EndNested would, with
// one reservation each and the tags as constants: every event goes through
// here.
void PerfettoTrackWriter::BeginEvent(Lane* lane, uint64_t ts, uint32_t type, uint32_t name_key) {
  if (!lane->started) StartLane(lane);
  cur_ = lane;
  interned_.Clear();
  const uint32_t name_iid = name_key != 0 ? NameIid(lane, name_key) : 0;  // may intern
  uint8_t* const start = enc_.BeginRaw(40);
  uint8_t* p = start;
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
  p = ProtoEncoder::EncodeVarintTo(type, p);
  if (name_iid != 0) {
    *p++ = kTag<pf::kTeNameIid, ProtoEncoder::kVarint>;
    p = ProtoEncoder::EncodeVarintTo(name_iid, p);
  }
  enc_.CommitRaw(p);
}

void PerfettoTrackWriter::EndEvent() {
  enc_.EndNested(event_token_);
  if (interned_.size() > 0) enc_.Bytes(pf::kInternedData, interned_.data(), interned_.size());
  uint8_t* p = enc_.BeginRaw(8);
  *p++ = kTag<pf::kSequenceId, ProtoEncoder::kVarint>;
  enc_.CommitRaw(ProtoEncoder::EncodeVarintTo(cur_->seq, p));
  enc_.EndNested(packet_token_);
}

void PerfettoTrackWriter::CloseUntil(Lane* lane, uint64_t ts) {
  while (!lane->open.empty() && lane->open.back() <= ts) {
    uint64_t end = lane->open.back();
    lane->open.pop_back();
    WriteSliceEnd(lane, end);
  }
}

// The bytes BeginEvent(lane, ts, kTypeSliceEnd, 0) + EndEvent() write,
// assembled in one reservation: half of all packets are slice ENDs.
void PerfettoTrackWriter::WriteSliceEnd(Lane* lane, uint64_t ts) {
  if (!lane->started) StartLane(lane);
  cur_ = lane;
  interned_.Clear();
  constexpr uint8_t kPacketTag = kTag<pf::kTracePacket, ProtoEncoder::kLengthDelimited>;
  constexpr uint8_t kTimestampTag = kTag<pf::kTimestamp, ProtoEncoder::kVarint>;
  constexpr uint8_t kTrackEventTag = kTag<pf::kTrackEvent, ProtoEncoder::kLengthDelimited>;
  constexpr uint8_t kTypeTag = kTag<pf::kTeType, ProtoEncoder::kVarint>;
  constexpr uint8_t kSequenceIdTag = kTag<pf::kSequenceId, ProtoEncoder::kVarint>;
  // 2 (packet tag, length) + 1 + 10 (timestamp) + 4 (track event) + 1 + 5
  // (sequence id): the packet body is under 128 bytes, one length byte.
  uint8_t* const start = enc_.BeginRaw(32);
  uint8_t* p = start + 2;
  *p++ = kTimestampTag;
  p = ProtoEncoder::EncodeVarintTo(ts - lane->last_ts, p);
  *p++ = kTrackEventTag;
  *p++ = 2;
  *p++ = kTypeTag;
  *p++ = pf::kTypeSliceEnd;
  *p++ = kSequenceIdTag;
  p = ProtoEncoder::EncodeVarintTo(lane->seq, p);
  lane->last_ts = ts;
  start[0] = kPacketTag;
  start[1] = static_cast<uint8_t>(p - start - 2);
  enc_.CommitRaw(p);
}

// A debug annotation {name_iid, value} is at most 1 + 5 + 2 + 10 bytes:
// written in one reservation with a one-byte length.
void PerfettoTrackWriter::AnnotateUint(uint32_t name_key, uint64_t v) {
  uint8_t* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaUint, ProtoEncoder::kVarint>;
  EndAnnotation(ProtoEncoder::EncodeVarintTo(v, p));
}

void PerfettoTrackWriter::AnnotateInt(uint32_t name_key, int64_t v) {
  uint8_t* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaInt, ProtoEncoder::kVarint>;
  EndAnnotation(ProtoEncoder::EncodeVarintTo(static_cast<uint64_t>(v), p));
}

void PerfettoTrackWriter::AnnotateDouble(uint32_t name_key, double v) {
  uint8_t* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaDouble, ProtoEncoder::kFixed64>;
  std::memcpy(p, &v, 8);
  EndAnnotation(p + 8);
}

uint8_t* PerfettoTrackWriter::BeginAnnotation(uint32_t name_iid) {
  annotation_start_ = enc_.BeginRaw(32);
  uint8_t* p = annotation_start_;
  *p++ = kTag<pf::kTeDebugAnnotations, ProtoEncoder::kLengthDelimited>;
  *p++ = 0;
  *p++ = kTag<pf::kDaNameIid, ProtoEncoder::kVarint>;
  return ProtoEncoder::EncodeVarintTo(name_iid, p);
}

void PerfettoTrackWriter::EndAnnotation(uint8_t* end) {
  annotation_start_[1] = static_cast<uint8_t>(end - annotation_start_ - 2);
  enc_.CommitRaw(end);
}

void PerfettoTrackWriter::Flush() {
  if (enc_.size() == 0) return;
  out_->Write(enc_.data(), enc_.size());
  flushed_ += enc_.size();
  enc_.Clear();
}

}  // namespace tracesmith::exporter
