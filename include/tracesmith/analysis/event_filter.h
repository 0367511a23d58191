// Event selection and per-name statistics, as `tracesmith view` (and its
// --stats) applies them: by kind, name regex, stream, device and a time
// window relative to the trace's start.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tracesmith/base/pattern.h"
#include "tracesmith/base/status.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/trace_source.h"
#include "tracesmith/model/event_names.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::analysis {

// What to select, as the user gives it.
struct EventFilterSpec {
  std::vector<std::string> kinds;  // event labels (kernel, memcpy, ...); empty: all
  std::string name_regex;          // ECMAScript, searched in the event's name; empty: all
  int64_t stream = -1, device = -1;
  std::string from, to;  // durations after the trace's start ("2ms"); empty: open
};

// Every event kind's label ("kernel, memcpy, ..."), as --kind takes them.
std::string EventKindLabels();

// A validated filter. The window is absolute (see Resolve).
class EventFilter {
 public:
  // Checks the kinds and compiles the regex (InvalidArgument naming what is wrong).
  static StatusOr<EventFilter> Make(const EventFilterSpec& spec);

  // Turns the window relative to `trace_start` into absolute times.
  Status Resolve(uint64_t trace_start);
  bool has_window() const { return !spec_.from.empty() || !spec_.to.empty(); }

  bool WantsKind(const char* label) const { return kinds_.empty() || kinds_.count(label) > 0; }
  bool has_kinds() const { return !kinds_.empty(); }
  template <typename T>
  bool Matches(const model::Trace& t, const T& e) const {
    if (model::EventEnd(e) < from_ || model::EventStart(e) > to_) return false;
    if (spec_.stream >= 0 && model::EventStream(e) != spec_.stream) return false;
    if (spec_.device >= 0 && model::EventDevice(e) != spec_.device) return false;
    return !name_ || name_->Search(model::EventName(t, e));
  }

 private:
  EventFilterSpec spec_;
  std::set<std::string> kinds_;
  std::optional<Pattern> name_;
  uint64_t from_ = 0, to_ = UINT64_MAX;
};

// An event of a loaded trace: its table and row.
struct EventRef {
  uint64_t start;
  model::TableKind kind;
  uint32_t row;
};

// The matching events of `t`, in start order (ties in table order).
std::vector<EventRef> SelectEvents(const model::Trace& t, const EventFilter& filter);

// Per (kind, name): how many events and, of those with a known end, the
// total, smallest and largest duration.
struct NameStats {
  std::string kind, name;
  uint64_t count = 0, timed = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
  uint64_t mean_ns() const { return timed ? total_ns / timed : 0; }
};
struct EventStats {
  uint64_t matched = 0;
  std::map<std::string, uint64_t> per_kind;
  std::vector<NameStats> per_name;  // by total duration, largest first
};

// Streams `reader`'s events through `filter` (bounded memory; a first pass
// finds the trace's start when the filter has a window). Damage is in
// reader.report().
StatusOr<EventStats> StreamEventStats(format::SbtReader& reader, EventFilter filter);
// The same from any source (a run merged on the fly: cluster/run_source.h);
// damage in source.report().
StatusOr<EventStats> StreamEventStats(format::TraceSource& source, EventFilter filter);

}  // namespace tracesmith::analysis
