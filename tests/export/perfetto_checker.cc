#include "export/perfetto_checker.h"

#include <cstring>
#include <set>
#include <unordered_map>

namespace tracesmith::testing {
namespace {

// One protobuf field.
struct Field {
  uint32_t id = 0;
  uint32_t wire = 0;
  uint64_t varint = 0;     // varint / fixed values
  std::string_view bytes;  // length-delimited payload
};

class Reader {
 public:
  explicit Reader(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool Next(Field* f, std::string* error) {
    if (p_ >= end_) return false;
    uint64_t tag;
    if (!Varint(&tag)) return Fail(error, "truncated tag");
    f->id = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<uint32_t>(tag & 7);
    f->bytes = {};
    switch (f->wire) {
      case 0:
        if (!Varint(&f->varint)) return Fail(error, "truncated varint");
        return true;
      case 1:
        if (end_ - p_ < 8) return Fail(error, "truncated fixed64");
        std::memcpy(&f->varint, p_, 8);
        p_ += 8;
        return true;
      case 5: {
        if (end_ - p_ < 4) return Fail(error, "truncated fixed32");
        uint32_t v;
        std::memcpy(&v, p_, 4);
        f->varint = v;
        p_ += 4;
        return true;
      }
      case 2: {
        uint64_t n;
        if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_))
          return Fail(error, "length past end");
        f->bytes = std::string_view(p_, n);
        p_ += n;
        return true;
      }
      default:
        return Fail(error, "bad wire type " + std::to_string(f->wire));
    }
  }

 private:
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && p_ < end_; shift += 7) {
      uint8_t b = static_cast<uint8_t>(*p_++);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool Fail(std::string* error, const std::string& what) {
    *error = what;
    p_ = end_;
    return false;
  }
  const char* p_;
  const char* end_;
};

struct SequenceState {
  bool cleared = false;
  uint64_t default_track = 0;
  uint32_t default_clock = 0;
  bool incremental = false;
  uint64_t clock_value = 0;
  uint64_t last_ts = 0;
  std::map<uint64_t, std::string> names, annotation_names, strings, functions;
  std::map<uint64_t, uint64_t> frame_function;  // frame iid -> function name iid (0 = none)
  std::map<uint64_t, std::vector<uint64_t>> callstacks;
};

struct OpenSlice {
  size_t index;
};

class Checker {
 public:
  PerfettoCheck Run(const std::string& bytes) {
    Reader trace(bytes);
    Field f;
    std::string err;
    while (trace.Next(&f, &err)) {
      if (f.id != 1 || f.wire != 2) continue;
      ++out_.packets;
      Packet(f.bytes);
    }
    if (!err.empty()) Error("trace: " + err);
    for (auto& [track, stack] : open_)
      if (!stack.empty())
        Error("track " + std::to_string(track) + " ends with " + std::to_string(stack.size()) +
              " open slice(s)");
    for (auto& [id, n] : flow_sources_)
      if (!flow_ends_.count(id)) Error("flow " + std::to_string(id) + " has no terminator");
    for (auto& [id, n] : flow_ends_)
      if (!flow_sources_.count(id)) Error("flow " + std::to_string(id) + " has no source");
    out_.flows = flow_ends_.size();
    return std::move(out_);
  }

 private:
  void Error(std::string e) {
    if (out_.errors.size() < 50)
      out_.errors.push_back("packet " + std::to_string(out_.packets) + ": " + e);
  }

  void Packet(std::string_view body) {
    Reader r(body);
    Field f;
    std::string err;
    uint32_t seq = 0, flags = 0, clock_id = 0;
    bool has_ts = false;
    uint64_t ts = 0;
    std::string_view event, descriptor, interned, defaults, snapshot;
    while (r.Next(&f, &err)) {
      switch (f.id) {
        case 8:
          has_ts = true;
          ts = f.varint;
          break;
        case 10:
          seq = static_cast<uint32_t>(f.varint);
          break;
        case 13:
          flags = static_cast<uint32_t>(f.varint);
          break;
        case 58:
          clock_id = static_cast<uint32_t>(f.varint);
          break;
        case 11:
          event = f.bytes;
          break;
        case 60:
          descriptor = f.bytes;
          break;
        case 12:
          interned = f.bytes;
          break;
        case 59:
          defaults = f.bytes;
          break;
        case 6:
          snapshot = f.bytes;
          break;
      }
    }
    if (!err.empty()) return Error("packet: " + err);
    if (seq == 0) return Error("packet without trusted_packet_sequence_id");
    SequenceState& s = seqs_[seq];
    if (flags & 1) s = SequenceState{.cleared = true};
    if (!defaults.empty()) Defaults(defaults, &s);
    if (!snapshot.empty()) Snapshot(snapshot, &s);
    if (!interned.empty()) {
      if (!s.cleared) Error("interned data before incremental state was cleared");
      Interned(interned, &s);
    }
    if (!descriptor.empty()) Descriptor(descriptor);
    if (event.empty()) return;
    // Resolve the timestamp.
    uint32_t clock = clock_id ? clock_id : s.default_clock;
    uint64_t abs = ts;
    if (clock == 64) {
      if (!s.incremental) return Error("clock 64 used before its ClockSnapshot");
      s.clock_value += ts;
      abs = s.clock_value;
    } else if (!has_ts) {
      return Error("track event without timestamp");
    }
    if (abs < s.last_ts)
      Error("sequence " + std::to_string(seq) + " goes back in time: " + std::to_string(abs) +
            " < " + std::to_string(s.last_ts));
    s.last_ts = abs;
    Event(event, abs, &s);
  }

  void Defaults(std::string_view body, SequenceState* s) {
    Reader r(body);
    Field f;
    std::string err;
    while (r.Next(&f, &err)) {
      if (f.id == 58) s->default_clock = static_cast<uint32_t>(f.varint);
      if (f.id == 11) {
        Reader te(f.bytes);
        Field g;
        while (te.Next(&g, &err))
          if (g.id == 11) s->default_track = g.varint;
      }
    }
  }
  void Snapshot(std::string_view body, SequenceState* s) {
    Reader r(body);
    Field f;
    std::string err;
    while (r.Next(&f, &err)) {
      if (f.id != 1) continue;
      Reader c(f.bytes);
      Field g;
      uint32_t id = 0;
      uint64_t value = 0;
      bool inc = false;
      while (c.Next(&g, &err)) {
        if (g.id == 1) id = static_cast<uint32_t>(g.varint);
        if (g.id == 2) value = g.varint;
        if (g.id == 3) inc = g.varint != 0;
      }
      if (id == 64) {
        if (!inc) Error("clock 64 is not marked incremental");
        s->incremental = true;
        s->clock_value = value;
      }
    }
  }
  static std::pair<uint64_t, std::string> IidString(std::string_view body, uint32_t str_field) {
    Reader r(body);
    Field f;
    std::string err;
    std::pair<uint64_t, std::string> out;
    while (r.Next(&f, &err)) {
      if (f.id == 1) out.first = f.varint;
      if (f.id == str_field) out.second = std::string(f.bytes);
    }
    return out;
  }
  void Interned(std::string_view body, SequenceState* s) {
    Reader r(body);
    Field f;
    std::string err;
    while (r.Next(&f, &err)) {
      switch (f.id) {
        case 2:
          s->names.insert(IidString(f.bytes, 2));
          break;
        case 3:
          s->annotation_names.insert(IidString(f.bytes, 2));
          break;
        case 29:
          s->strings.insert(IidString(f.bytes, 2));
          break;
        case 5:
          s->functions.insert(IidString(f.bytes, 2));
          break;
        case 6: {
          Reader fr(f.bytes);
          Field g;
          uint64_t iid = 0, fn = 0;
          while (fr.Next(&g, &err)) {
            if (g.id == 1) iid = g.varint;
            if (g.id == 2) fn = g.varint;
          }
          s->frame_function[iid] = fn;
          break;
        }
        case 7: {
          Reader cr(f.bytes);
          Field g;
          uint64_t iid = 0;
          std::vector<uint64_t> frames;
          while (cr.Next(&g, &err)) {
            if (g.id == 1) iid = g.varint;
            if (g.id == 2) frames.push_back(g.varint);
          }
          for (uint64_t fr : frames)
            if (!s->frame_function.count(fr))
              Error("callstack frame " + std::to_string(fr) + " not interned");
          s->callstacks[iid] = frames;
          break;
        }
      }
    }
    for (auto& [frame, fn] : s->frame_function)
      if (fn != 0 && !s->functions.count(fn))
        Error("frame function name " + std::to_string(fn) + " not interned");
  }
  void Descriptor(std::string_view body) {
    Reader r(body);
    Field f;
    std::string err;
    uint64_t uuid = 0, parent = 0;
    int64_t pid = -1;
    std::string name;
    while (r.Next(&f, &err)) {
      if (f.id == 1) uuid = f.varint;
      if (f.id == 5) parent = f.varint;
      if (f.id == 2) name = std::string(f.bytes);
      if (f.id == 3 || f.id == 4) {  // process / thread descriptor
        Reader d(f.bytes);
        Field g;
        while (d.Next(&g, &err)) {
          if ((f.id == 3 && g.id == 6) || (f.id == 4 && g.id == 5)) name = std::string(g.bytes);
          if (f.id == 3 && g.id == 1) pid = static_cast<int64_t>(g.varint);
        }
      }
    }
    if (uuid == 0) return Error("track descriptor without uuid");
    if (parent != 0 && !out_.track_names.count(parent))
      Error("track " + std::to_string(uuid) + " described before its parent " +
            std::to_string(parent));
    out_.track_names[uuid] = name;
    out_.track_parents[uuid] = parent;
    if (pid >= 0) out_.process_pids[uuid] = pid;
  }

  std::string AnnotationText(std::string_view body, SequenceState* s, std::string* name) {
    Reader r(body);
    Field f;
    std::string err, value;
    while (r.Next(&f, &err)) {
      switch (f.id) {
        case 1: {
          auto it = s->annotation_names.find(f.varint);
          if (it == s->annotation_names.end())
            Error("annotation name iid " + std::to_string(f.varint) + " unresolved");
          else
            *name = it->second;
          break;
        }
        case 10:
          *name = std::string(f.bytes);
          break;
        case 2:
        case 3:
          value = std::to_string(f.varint);
          break;
        case 4:
          value = std::to_string(static_cast<int64_t>(f.varint));
          break;
        case 5: {
          double d;
          std::memcpy(&d, &f.varint, 8);
          value = std::to_string(d);
          break;
        }
        case 6:
          value = std::string(f.bytes);
          break;
        case 17: {
          auto it = s->strings.find(f.varint);
          if (it == s->strings.end())
            Error("annotation string iid " + std::to_string(f.varint) + " unresolved");
          else
            value = it->second;
          break;
        }
      }
    }
    return value;
  }

  void Event(std::string_view body, uint64_t ts, SequenceState* s) {
    Reader r(body);
    Field f;
    std::string err;
    uint64_t type = 0, track = s->default_track, callstack = 0;
    std::string name;
    bool has_name = false;
    std::map<std::string, std::string> args;
    std::vector<uint64_t> flows_out, flows_end;
    double counter = 0;
    while (r.Next(&f, &err)) {
      switch (f.id) {
        case 9:
          type = f.varint;
          break;
        case 11:
          track = f.varint;
          break;
        case 10: {
          auto it = s->names.find(f.varint);
          if (it == s->names.end())
            Error("event name iid " + std::to_string(f.varint) + " unresolved");
          else
            name = it->second;
          has_name = true;
          break;
        }
        case 23:
          name = std::string(f.bytes);
          has_name = true;
          break;
        case 4: {
          std::string an;
          std::string v = AnnotationText(f.bytes, s, &an);
          args[an] = v;
          break;
        }
        case 36:
        case 47:
          flows_out.push_back(f.varint);
          break;
        case 42:
        case 48:
          flows_end.push_back(f.varint);
          break;
        case 56:
          callstack = f.varint;
          break;
        case 30:
          counter = static_cast<double>(static_cast<int64_t>(f.varint));
          break;
        case 44:
          std::memcpy(&counter, &f.varint, 8);
          break;
      }
    }
    if (track == 0) return Error("track event without track");
    if (!out_.track_names.count(track))
      Error("track " + std::to_string(track) + " used before it was described");
    for (uint64_t id : flows_out) ++flow_sources_[id];
    for (uint64_t id : flows_end) {
      if (!flow_sources_.count(id))
        Error("flow " + std::to_string(id) + " terminated before its source");
      if (flow_ends_[id]++ > 0) Error("flow " + std::to_string(id) + " terminated twice");
    }
    auto& stack = open_[track];
    if (type == 1) {  // BEGIN
      if (!has_name) Error("slice without name");
      PerfettoSlice slice{track, ts, 0, name, args, static_cast<int>(stack.size())};
      if (callstack != 0) {
        auto cs = s->callstacks.find(callstack);
        if (cs == s->callstacks.end()) {
          Error("callstack iid " + std::to_string(callstack) + " unresolved");
        } else {
          slice.callstack_frames = cs->second.size();
          if (!cs->second.empty()) {
            uint64_t fn = s->frame_function[cs->second.back()];
            if (fn) slice.leaf_function = s->functions[fn];
          }
        }
      }
      stack.push_back(out_.slices.size());
      out_.slices.push_back(std::move(slice));
    } else if (type == 2) {  // END
      if (stack.empty())
        return Error("SLICE_END without open slice on track " + std::to_string(track));
      PerfettoSlice& open = out_.slices[stack.back()];
      if (ts < open.start) Error("slice ends before it begins");
      open.end = ts;
      stack.pop_back();
    } else if (type == 3) {
      ++out_.instants;
    } else if (type == 4) {
      ++out_.counters;
      out_.counter_values[out_.track_names[track]].push_back(counter);
      out_.counter_samples[track].push_back({ts, counter});
    } else {
      Error("unknown track event type " + std::to_string(type));
    }
  }

  PerfettoCheck out_;
  std::unordered_map<uint32_t, SequenceState> seqs_;
  std::map<uint64_t, std::vector<size_t>> open_;
  std::map<uint64_t, int> flow_sources_, flow_ends_;
};

}  // namespace

std::string PerfettoCheck::Summary() const {
  std::string s;
  for (size_t i = 0; i < errors.size() && i < 10; ++i) s += errors[i] + "\n";
  return s;
}

PerfettoCheck CheckPerfettoTrace(const std::string& bytes) { return Checker().Run(bytes); }

}  // namespace tracesmith::testing
