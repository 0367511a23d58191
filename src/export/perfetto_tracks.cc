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
                                          std::string_view name, bool bytes_unit,
                                          std::string_view unit_name,
                                          std::string_view y_axis_share_key) {
  size_t p = enc_.BeginNested(pf::kTracePacket);
  size_t td = enc_.BeginNested(pf::kTrackDescriptor);
  enc_.Varint(1, uuid);
  if (parent_uuid != 0) enc_.Varint(5, parent_uuid);
  enc_.String(2, name);
  size_t cd = enc_.BeginNested(8);    // CounterDescriptor
  if (bytes_unit) enc_.Varint(3, 3);  // UNIT_SIZE_BYTES
  if (!bytes_unit && !unit_name.empty()) enc_.String(6, unit_name);
  if (!y_axis_share_key.empty()) enc_.String(7, y_axis_share_key);
  enc_.EndNested(cd);
  enc_.EndNested(td);
  enc_.Varint(pf::kSequenceId, 1);
  enc_.EndNested(p);
}

TrackLane* PerfettoTrackWriter::NewLane(uint64_t uuid) {
  TrackLane& lane = lanes_.emplace_back();
  lane.uuid = uuid;
  lane.seq = next_seq_++;
  lane.seq_field[0] = kTag<pf::kSequenceId, ProtoEncoder::kVarint>;
  lane.seq_field_size = static_cast<uint8_t>(
      ProtoEncoder::EncodeVarintTo(lane.seq, lane.seq_field + 1) - lane.seq_field);
  lane.last_ts = base_ts_;
  return &lane;
}

// The first lane did not fit (LaneFor checked it): the others, or a new one.
TrackLane* PerfettoTrackWriter::OtherLaneFor(TrackGroup* g, uint64_t s, uint64_t e) {
  for (size_t i = 1; i < g->lanes.size(); ++i) {
    TrackLane* lane = g->lanes[i];
    if (!Nests(lane, s, e)) continue;
    CloseUntil(lane, s);
    return lane;
  }
  uint64_t uuid = NewUuid();
  std::string name = g->name + " #" + std::to_string(g->lanes.size() + 1);
  DescribeTrack(uuid, g->parent_uuid, name);
  TrackLane* lane = NewLane(uuid);
  g->lanes.push_back(lane);
  ++extra_lanes_;
  return lane;
}

TrackLane* PerfettoTrackWriter::InstantLaneFor(TrackGroup* g, uint64_t ts) {
  for (TrackLane* lane : g->lanes) {
    if (ts < lane->last_ts) continue;
    CloseUntil(lane, ts);
    return lane;
  }
  uint64_t uuid = NewUuid();
  DescribeTrack(uuid, g->parent_uuid, g->name + " #" + std::to_string(g->lanes.size() + 1));
  TrackLane* lane = NewLane(uuid);
  g->lanes.push_back(lane);
  ++extra_lanes_;
  return lane;
}

void PerfettoTrackWriter::StartLane(TrackLane* lane) {
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

uint32_t PerfettoTrackWriter::NewNameIid(TrackLane* lane, uint32_t key) {
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

uint32_t PerfettoTrackWriter::NewAnnotationNameIid(uint32_t key) {
  auto& slot = cur_->annotation_cache[key & 15];
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

void PerfettoTrackWriter::AnnotateInt(uint32_t name_key, int64_t v) {
  ProtoByte* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaInt, ProtoEncoder::kVarint>;
  EndAnnotation(ProtoEncoder::EncodeVarintTo(static_cast<uint64_t>(v), p));
}

void PerfettoTrackWriter::AnnotateDouble(uint32_t name_key, double v) {
  ProtoByte* p = BeginAnnotation(AnnotationNameIid(name_key));
  *p++ = kTag<pf::kDaDouble, ProtoEncoder::kFixed64>;
  std::memcpy(p, &v, 8);
  EndAnnotation(p + 8);
}

void PerfettoTrackWriter::AnnotateString(uint32_t name_key, std::string_view v) {
  const uint32_t name_iid = AnnotationNameIid(name_key);  // may intern
  size_t n = enc_.BeginNested(pf::kTeDebugAnnotations);
  enc_.Varint(pf::kDaNameIid, name_iid);
  enc_.String(pf::kDaString, v);
  enc_.EndNested(n);
}

void PerfettoTrackWriter::Flush() {
  if (enc_.size() == 0) return;
  out_->Write(enc_.data(), enc_.size());
  flushed_ += enc_.size();
  enc_.Clear();
}

}  // namespace tracesmith::exporter
