#include "tracesmith/analysis/event_filter.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"  // ParseDuration
#include "tracesmith/base/printable.h"

namespace tracesmith::analysis {

using namespace model;

std::string EventKindLabels() {
  std::string out;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent)
      out += (out.empty() ? "" : ", ") + std::string(RecordTraits<T>::kLabel);
  });
  return out;
}

StatusOr<EventFilter> EventFilter::Make(const EventFilterSpec& spec) {
  EventFilter f;
  f.spec_ = spec;
  for (const std::string& k : spec.kinds) {
    bool known = false;
    ForEachRecordType(
        [&]<typename T>() { known |= RecordTraits<T>::kIsEvent && k == RecordTraits<T>::kLabel; });
    if (!known)
      return InvalidArgument("unknown event kind '" + k + "' (kinds: " + EventKindLabels() + ")");
    f.kinds_.insert(k);
  }
  if (!spec.name_regex.empty()) {
    auto p = Pattern::Compile(spec.name_regex);
    if (!p.ok())
      return InvalidArgument("bad --name regex '" + spec.name_regex + "': " + p.status().message());
    f.name_ = std::move(*p);
  }
  return f;
}

Status EventFilter::Resolve(uint64_t trace_start) {
  from_ = 0;
  to_ = UINT64_MAX;
  if (!spec_.from.empty()) {
    auto d = ParseDuration(spec_.from);
    if (!d.ok()) return d.status();
    from_ = trace_start + *d;
  }
  if (!spec_.to.empty()) {
    auto d = ParseDuration(spec_.to);
    if (!d.ok()) return d.status();
    to_ = trace_start + *d;
  }
  return OkStatus();
}

std::vector<EventRef> SelectEvents(const Trace& t, const EventFilter& filter) {
  std::vector<EventRef> refs;
  ForEachRecordType([&]<typename T>() {
    if constexpr (RecordTraits<T>::kIsEvent) {
      if (!filter.WantsKind(RecordTraits<T>::kLabel)) return;
      const auto& rows = t.Rows<T>();
      for (uint32_t i = 0; i < rows.size(); ++i)
        if (filter.Matches(t, rows[i]))
          refs.push_back({EventStart(rows[i]), RecordTraits<T>::kKind, i});
    }
  });
  std::stable_sort(refs.begin(), refs.end(),
                   [](const EventRef& a, const EventRef& b) { return a.start < b.start; });
  return refs;
}

StatusOr<EventStats> StreamEventStats(format::SbtReader& reader, EventFilter filter) {
  return StreamEventStats(*format::ReaderSource(reader, std::string()), std::move(filter));
}

StatusOr<EventStats> StreamEventStats(format::TraceSource& reader, EventFilter filter) {
  uint64_t t0 = 0;
  if (filter.has_window()) {
    uint64_t lo = UINT64_MAX, hi = 0;
    Status st = reader.Stream([&](const Trace& batch, TableKind) {
      auto [blo, bhi] = batch.TimeRange();
      if (bhi != 0) lo = std::min(lo, blo), hi = std::max(hi, bhi);
      return OkStatus();
    });
    if (!st.ok()) return st;
    t0 = hi == 0 ? 0 : lo;
  }
  if (Status st = filter.Resolve(t0); !st.ok()) return st;
  EventStats out;
  std::map<std::pair<std::string, std::string>, NameStats> per_name;
  // Chunks of kinds the filter leaves out are not decoded.
  format::SbtReader::EventKindFilter want_kind;
  if (filter.has_kinds())
    want_kind = [&](TableKind k) { return filter.WantsKind(TableKindLabel(k)); };
  Status st = reader.Stream(
      [&](const Trace& t, TableKind kind) {
        ForEachRecordType([&]<typename T>() {
          if constexpr (RecordTraits<T>::kIsEvent) {
            if (RecordTraits<T>::kKind != kind || !filter.WantsKind(RecordTraits<T>::kLabel))
              return;
            for (const T& e : t.Rows<T>()) {
              if (!filter.Matches(t, e)) continue;
              ++out.matched;
              out.per_kind[RecordTraits<T>::kLabel]++;
              std::string name = Printable(EventName(t, e));
              NameStats& a = per_name[{RecordTraits<T>::kLabel, name}];
              if (a.count++ == 0) a.kind = RecordTraits<T>::kLabel, a.name = std::move(name);
              if (EventEnd(e) < EventStart(e)) continue;  // end unknown: no duration
              const uint64_t d = EventEnd(e) - EventStart(e);
              a.timed++;
              a.total_ns += d;
              a.min_ns = std::min(a.min_ns, d);
              a.max_ns = std::max(a.max_ns, d);
            }
          }
        });
        return OkStatus();
      },
      {}, want_kind);
  if (!st.ok()) return st;
  out.per_name.reserve(per_name.size());
  for (auto& [key, s] : per_name) out.per_name.push_back(std::move(s));
  std::stable_sort(out.per_name.begin(), out.per_name.end(),
                   [](const NameStats& a, const NameStats& b) { return a.total_ns > b.total_ns; });
  return out;
}

}  // namespace tracesmith::analysis
