#include "tracesmith/capture/app_events.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "tracesmith/capture/thread_rings.h"

namespace tracesmith::capture {
namespace {

struct AppTag;
// 16384 records (512 KiB) per thread: the writer empties the rings every
// 5 ms, so a thread may make 3 M calls a second before one is dropped.
using Rings = ThreadRings<AppRecord, 16384, AppTag>;

thread_local uint32_t t_tid = 0;

// The longest prefix of [text, text + len) of at most `max` bytes that does
// not end inside a UTF-8 character.
size_t Utf8Prefix(const char* text, size_t len, size_t max) {
  if (len <= max) return len;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

void DrainAppRings(void (*fn)(const AppRecord&, void*), void* ctx) {
  Rings::Drain([&](const AppRecord& r) { fn(r, ctx); });
}

AppEvents& AppEvents::Get() {
  static AppEvents* events = new AppEvents();  // never destroyed: threads may call at exit
  return *events;
}

uint32_t AppEvents::Tid() {
  if (!t_tid) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_tid;
}

uint32_t AppEvents::Intern(const char* text, size_t len, bool args) {
  if (text == nullptr) return 0;
  if (!args && len > kMaxAppNameBytes) {
    len = Utf8Prefix(text, len, kMaxAppNameBytes);
    names_truncated_.fetch_add(1, std::memory_order_relaxed);
  }
  if (args && len > kMaxAppArgsBytes) {
    args_dropped_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::string key(text, len);
  std::lock_guard<std::mutex> lock(mu_);
  auto& map = args ? args_ : names_;
  if (auto it = map.find(key); it != map.end()) return it->second;
  const bool full = args
                        ? (args_.size() >= kMaxAppArgs || args_bytes_ + len > kMaxAppArgsTotalBytes)
                        : names_.size() >= kMaxAppNames;
  if (full) {
    (args ? args_dropped_ : names_dropped_).fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (args) args_bytes_ += len;
  const uint32_t id = static_cast<uint32_t>(texts_.size());
  auto [it, inserted] = map.emplace(std::move(key), id);
  texts_.push_back(&it->first);
  return id;
}

std::string AppEvents::Text(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < texts_.size() && texts_[id] ? *texts_[id] : std::string();
}

uint64_t AppEvents::Now() const {
  Clock clock = clock_.load(std::memory_order_acquire);
  return clock && __atomic_load_n(&capturing_, __ATOMIC_RELAXED) ? clock() : 0;
}

bool AppEvents::Push(const AppRecord& r) {
  if (r.name == 0) {  // a name that could not be kept: counted, not recorded
    names_dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return Rings::Push(r);
}

void AppEvents::Counter(uint32_t name, double value) {
  if (!std::isfinite(value)) {
    nan_.fetch_add(1, std::memory_order_relaxed);
    if (!nan_warned_.exchange(true))
      std::fprintf(stderr,
                   "tracesmith: warning: counter '%s' given %s: not recorded (every such value "
                   "is counted in the trace's stat capture.app.nan_rejected)\n",
                   Text(name).c_str(), std::isnan(value) ? "NaN" : "an infinite value");
    return;
  }
  const uint64_t ts = Now();
  if (!ts) return;
  AppRecord r;
  r.start_ns = ts;
  std::memcpy(&r.end_or_value, &value, sizeof(value));
  r.name = name;
  r.tid = Tid();
  Push(r);
}

void AppEvents::Instant(uint32_t name, uint32_t args) {
  const uint64_t ts = Now();
  if (!ts) return;
  AppRecord r;
  r.start_ns = r.end_or_value = ts;
  r.name = name;
  r.args = args;
  r.tid = Tid();
  r.kind = model::kAppInstant;
  Push(r);
}

void AppEvents::Range(uint32_t name, uint32_t args, uint64_t start_ns) {
  const uint64_t ts = Now();
  // Begun before the capture range's last switch on (or before any): not kept.
  if (!ts || !start_ns || start_ns < on_since_ns_.load(std::memory_order_relaxed)) return;
  AppRecord r;
  r.start_ns = start_ns;
  r.end_or_value = ts < start_ns ? start_ns : ts;
  r.name = name;
  r.args = args;
  r.tid = Tid();
  r.kind = model::kAppRange;
  Push(r);
}

void AppEvents::Begin(Clock clock, bool on) {
  std::lock_guard<std::mutex> lock(gate_mu_);
  Rings::Drain([](const AppRecord&) {});  // an earlier capture's last calls
  clock_.store(clock, std::memory_order_release);
  begun_ = true;
  __atomic_store_n(&capturing_, 0, __ATOMIC_RELEASE);
  if (on) {
    on_since_ns_.store(clock(), std::memory_order_relaxed);
    __atomic_store_n(&capturing_, 1, __ATOMIC_RELEASE);
  }
}

void AppEvents::SetOn(bool on) {
  std::lock_guard<std::mutex> lock(gate_mu_);
  if (!begun_ || __atomic_load_n(&capturing_, __ATOMIC_RELAXED) == int(on)) return;
  if (on) on_since_ns_.store(clock_.load(std::memory_order_acquire)(), std::memory_order_relaxed);
  __atomic_store_n(&capturing_, on ? 1 : 0, __ATOMIC_RELEASE);
}

void AppEvents::End() {
  std::lock_guard<std::mutex> lock(gate_mu_);
  begun_ = false;
  __atomic_store_n(&capturing_, 0, __ATOMIC_RELEASE);
}

AppEventStats AppEvents::Counts() const {
  AppEventStats s;
  s.ring_overflows = Rings::dropped();
  s.names_dropped = names_dropped_.load(std::memory_order_relaxed);
  s.names_truncated = names_truncated_.load(std::memory_order_relaxed);
  s.args_dropped = args_dropped_.load(std::memory_order_relaxed);
  s.nan_rejected = nan_.load(std::memory_order_relaxed);
  return s;
}

// ---- AppEventWriter ---------------------------------------------------------

void AppEventWriter::Collect() {
  AppEvents::Get().Drain([this](const AppRecord& r) { pending_.push_back(r); });
}

uint32_t AppEventWriter::StringId(format::SbtWriter& sbt, uint32_t app_id) {
  if (app_id == 0) return 0;
  if (app_id >= string_ids_.size()) string_ids_.resize(app_id + 1, 0);
  uint32_t& id = string_ids_[app_id];
  if (id == 0) id = sbt.InternString(AppEvents::Get().Text(app_id));
  return id;
}

void AppEventWriter::Write(format::SbtWriter& sbt) {
  for (const AppRecord& r : pending_) {
    if (r.kind == 0) {
      model::AppCounterEvent c;
      c.ts_ns = r.start_ns;
      std::memcpy(&c.value, &r.end_or_value, sizeof(c.value));
      c.pid = pid_;
      c.tid = r.tid;
      c.name_id = StringId(sbt, r.name);
      sbt.Append(c);
      ++counters_;
    } else {
      model::AppEvent e;
      e.start_ns = r.start_ns;
      e.end_ns = r.end_or_value;
      e.pid = pid_;
      e.tid = r.tid;
      e.name_id = StringId(sbt, r.name);
      e.args_id = StringId(sbt, r.args);
      e.kind = r.kind;
      sbt.Append(e);
      ++(r.kind == model::kAppInstant ? instants_ : ranges_);
    }
  }
  pending_.clear();
}

AppEventStats AppEventWriter::Stats() const {
  const AppEventStats now = AppEvents::Get().Counts();
  AppEventStats s;
  s.counters = counters_;
  s.ranges = ranges_;
  s.instants = instants_;
  s.ring_overflows = now.ring_overflows - start_.ring_overflows;
  s.names_dropped = now.names_dropped - start_.names_dropped;
  s.names_truncated = now.names_truncated - start_.names_truncated;
  s.args_dropped = now.args_dropped - start_.args_dropped;
  s.nan_rejected = now.nan_rejected - start_.nan_rejected;
  return s;
}

}  // namespace tracesmith::capture
