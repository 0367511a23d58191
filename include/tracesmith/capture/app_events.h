// The program's own counters, instants and ranges (include/tracesmith/app/app.h,
// tracesmith.counter / instant / range): the library side, without CUDA.
//
// AppEvents is process-wide, as the program's calls are: its names outlive
// captures (a caller keeps an id across them), its per-thread rings are
// ThreadRings (thread_rings.h: no lock, no allocation on a call), and a
// capture switches it on with its clock (Begin) and off (End). The capture's
// writer thread drains the rings into AppEventWriter, which appends the rows
// (model::AppCounterEvent, model::AppEvent) with their names interned in the
// trace's string table. app_c_api.cc exports it as `tracesmith_app_api`.
//
// Bounds (bad input never grows memory without limit): names truncated to
// kMaxAppNameBytes; at most kMaxAppNames distinct names and kMaxAppArgs
// distinct argument texts of at most kMaxAppArgsBytes (kMaxAppArgsTotalBytes in all); a NaN or
// infinite counter value is rejected (one warning on stderr per process, then counted). What is
// dropped is counted in `capture.app.*` stats.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::capture {

// 256 bytes: a name is a label, not a payload; longer ones are cut (at a
// UTF-8 character boundary) and counted.
inline constexpr size_t kMaxAppNameBytes = 256;
// 10000 names: counters and ranges a person reads; a program that makes a
// name per step (f"loss {i}") is told by the drop count instead of filling
// memory.
inline constexpr uint32_t kMaxAppNames = 10000;
// Argument texts (per-event JSON objects) vary more: 100000 distinct ones of
// at most 4 KiB each and 16 MiB in all, kept for the process's life.
inline constexpr uint32_t kMaxAppArgs = 100000;
inline constexpr size_t kMaxAppArgsBytes = 4096;
inline constexpr size_t kMaxAppArgsTotalBytes = 16u << 20;

// One call, as a thread's ring holds it. 32 bytes.
struct AppRecord {
  uint64_t start_ns = 0;
  uint64_t end_or_value = 0;  // range/instant: end_ns; counter: the double's bits
  uint32_t name = 0;
  uint32_t args = 0;
  uint32_t tid = 0;
  uint8_t kind = 0;  // 0 counter, else model::AppEventKind
  uint8_t pad[3] = {};
};
static_assert(sizeof(AppRecord) == 32, "one cache line holds two");

struct AppEventStats {
  uint64_t counters = 0, ranges = 0, instants = 0;  // rows written
  uint64_t ring_overflows = 0;                      // calls dropped: a thread's ring was full
  uint64_t names_dropped = 0;                       // calls dropped: past kMaxAppNames (or id 0)
  uint64_t names_truncated = 0;                     // names cut to kMaxAppNameBytes
  uint64_t args_dropped = 0;  // argument texts not kept (too long, past kMaxAppArgs)
  uint64_t nan_rejected = 0;  // counter values that were NaN or infinite
};

class AppEvents {
 public:
  using Clock = uint64_t (*)();
  static AppEvents& Get();  // the process's (never destroyed)

  // The program's side (any thread).
  // The id of a name (args = false) or an argument text, 0 when not kept.
  uint32_t Intern(const char* text, size_t len, bool args);
  void Counter(uint32_t name, double value);
  void Instant(uint32_t name, uint32_t args);
  void Range(uint32_t name, uint32_t args, uint64_t start_ns);
  uint64_t Now() const;
  // Non-zero while a capture records (read by the callers' fast path).
  const int* capturing_flag() const { return &capturing_; }

  // The capture's side: records from Begin to End, timestamps from `clock`.
  // Begin discards what an earlier capture left in the rings.
  // `on` false: the capture's range is not on yet (--capture-range, --delay):
  // calls record only while SetOn(true) holds, as kernels do. A range is kept
  // when it starts after the last switch on and ends before the switch off.
  void Begin(Clock clock, bool on = true);
  void SetOn(bool on);  // between Begin and End; otherwise nothing
  void End();
  // Writer thread: fn(record) for every record made so far.
  template <typename Fn>
  void Drain(Fn&& fn);
  // The text of an id (empty when unknown).
  std::string Text(uint32_t id) const;
  // Counts since the process started (the capture takes differences).
  AppEventStats Counts() const;

 private:
  AppEvents() = default;
  bool Push(const AppRecord& r);
  uint32_t Tid();

  alignas(64) int capturing_ = 0;  // read and written with __atomic builtins
  std::atomic<Clock> clock_{nullptr};
  std::atomic<uint64_t> on_since_ns_{0};  // the clock at the last switch on
  std::mutex gate_mu_;                    // Begin, SetOn, End
  bool begun_ = false;                    // between Begin and End (gate_mu_)
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint32_t> names_, args_;
  size_t args_bytes_ = 0;
  std::vector<const std::string*> texts_{nullptr};  // id -> key in names_ / args_
  std::atomic<uint64_t> names_dropped_{0}, names_truncated_{0}, args_dropped_{0}, nan_{0};
  std::atomic<bool> nan_warned_{false};
};

// One capture's rows: the records drained from AppEvents, appended with
// their names interned in the trace (a capture's string table is its own).
class AppEventWriter {
 public:
  explicit AppEventWriter(uint32_t pid) : pid_(pid), start_(AppEvents::Get().Counts()) {}
  void Collect();                      // writer thread, every poll
  void Write(format::SbtWriter& sbt);  // every flush
  AppEventStats Stats() const;         // this capture's
  // Appends the `capture.app.*` stat rows through add(name, value, severity).
  template <typename Add>
  void AddStats(Add&& add) const;

 private:
  uint32_t StringId(format::SbtWriter& sbt, uint32_t app_id);
  uint32_t pid_;
  AppEventStats start_;
  uint64_t counters_ = 0, ranges_ = 0, instants_ = 0;
  std::vector<AppRecord> pending_;
  std::vector<uint32_t> string_ids_;  // app id -> the trace's string id (0: not yet)
};

// ---- inline ---------------------------------------------------------------

void DrainAppRings(void (*fn)(const AppRecord&, void*), void* ctx);

template <typename Fn>
void AppEvents::Drain(Fn&& fn) {
  DrainAppRings([](const AppRecord& r, void* c) { (*static_cast<Fn*>(c))(r); }, &fn);
}

template <typename Add>
void AppEventWriter::AddStats(Add&& add) const {
  const AppEventStats s = Stats();
  add("capture.app.counters", s.counters, model::kStatInfo);
  add("capture.app.ranges", s.ranges, model::kStatInfo);
  add("capture.app.instants", s.instants, model::kStatInfo);
  add("capture.app.ring_overflows", s.ring_overflows, model::kStatDataLoss);
  add("capture.app.names_dropped", s.names_dropped, model::kStatDataLoss);
  add("capture.app.names_truncated", s.names_truncated, model::kStatWarning);
  add("capture.app.args_dropped", s.args_dropped, model::kStatDataLoss);
  add("capture.app.nan_rejected", s.nan_rejected, model::kStatWarning);
}

}  // namespace tracesmith::capture
