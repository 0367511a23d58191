// The program's own counters, instants and ranges on TraceSmith's timeline:
// a header-only C and C++ API that needs no linking with TraceSmith.
//
//   #include "tracesmith/app/app.h"
//   TRACESMITH_COUNTER("loss", loss);             // C and C++: the name interned once
//   TRACESMITH_INSTANT("checkpoint");
//   { TRACESMITH_RANGE("eval"); evaluate(); }     // C++: a scoped range
//
// Under `tracesmith profile` (or an in-process capture) the calls are recorded
// as rows of the trace (SBT kinds appcounter and appevent) with the calling
// thread; when nothing captures they cost a load and a branch.
//
// How it finds the capture: the entry point `tracesmith_app_api`, exported by
// libtracesmith-inject.so, is looked up once per translation unit and cached:
// first with dlsym(RTLD_DEFAULT), then in the library that
// CUDA_INJECTION64_PATH or TRACESMITH_INJECT_LIB names when its file name
// contains "tracesmith" (loaded here if the driver has not loaded it yet, so
// calls made before CUDA starts find it too). Not found: every call is a
// no-op. Link with -ldl on glibc older than 2.34.
//
// Per call, while capturing: a timestamp and a write into the calling
// thread's own ring (no lock, no allocation). Names and argument texts are
// interned once (ts_app_intern: a lock and a hash lookup; keep the id).
// Bounds, kept by the library: names truncated to 256 bytes; at most 10000
// distinct names and 100000 distinct argument texts of at most 4096 bytes
// (past them a call is dropped and counted, `tracesmith info` shows it); NaN
// values rejected (one warning, then counted).
#ifndef TRACESMITH_APP_H_
#define TRACESMITH_APP_H_

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRACESMITH_APP_API_VERSION 1u

// What the capture library exports (one table: one symbol to look up).
typedef struct TracesmithAppApi {
  uint32_t version;      // TRACESMITH_APP_API_VERSION
  uint32_t size;         // sizeof(TracesmithAppApi) of the library
  const int* capturing;  // non-zero while a capture records the program's events
  // The id of a name (what = 0) or an argument text (what = 1, one JSON
  // object); 0 when it cannot be kept (the caps above).
  uint32_t (*intern)(const char* text, size_t len, int what);
  void (*counter)(uint32_t name, double value);
  void (*instant)(uint32_t name, uint32_t args);
  uint64_t (*now)(void);  // the capture clock (0: not capturing)
  void (*range)(uint32_t name, uint32_t args, uint64_t start_ns);  // [start_ns, now]
} TracesmithAppApi;

// Exported by libtracesmith-inject.so: the table, or NULL when `version` is
// not served.
typedef const TracesmithAppApi* (*TracesmithAppApiFn)(uint32_t version);

static inline const TracesmithAppApi* ts_app__from(void* handle) {
  TracesmithAppApiFn get = (TracesmithAppApiFn)dlsym(handle, "tracesmith_app_api");
  return get ? get(TRACESMITH_APP_API_VERSION) : NULL;
}

// Whether `path` names a TraceSmith library (never load another tool's).
static inline int ts_app__is_ours(const char* path) {
  if (!path || !*path) return 0;
  const char* base = strrchr(path, '/');
  return strstr(base ? base + 1 : path, "tracesmith") != NULL;
}

// The table from the library at `path` (loading it when it is not loaded).
static inline const TracesmithAppApi* ts_app_load(const char* path) {
  if (!ts_app__is_ours(path)) return NULL;
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!h) h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  return h ? ts_app__from(h) : NULL;
}

static inline const TracesmithAppApi* ts_app__resolve(void) {
  const TracesmithAppApi* api = ts_app__from(RTLD_DEFAULT);
  if (!api) api = ts_app_load(getenv("CUDA_INJECTION64_PATH"));
  if (!api) api = ts_app_load(getenv("TRACESMITH_INJECT_LIB"));
  return api;
}

// The table, resolved on the first call and cached (NULL: no capture library).
static inline const TracesmithAppApi* ts_app_api(void) {
  static const TracesmithAppApi* cached;
  static int resolved;
  if (__builtin_expect(__atomic_load_n(&resolved, __ATOMIC_ACQUIRE), 1))
    return __atomic_load_n(&cached, __ATOMIC_RELAXED);
  const TracesmithAppApi* api = ts_app__resolve();
  __atomic_store_n(&cached, api, __ATOMIC_RELAXED);
  __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
  return api;
}

// The table while a capture records, else NULL.
static inline const TracesmithAppApi* ts_app_capturing(void) {
  const TracesmithAppApi* api = ts_app_api();
  return api && __atomic_load_n(api->capturing, __ATOMIC_RELAXED) ? api : NULL;
}

// The id of `name` (0 without a capture library): intern once, keep the id.
static inline uint32_t ts_app_intern(const char* name) {
  const TracesmithAppApi* api = ts_app_api();
  return api && name ? api->intern(name, strlen(name), 0) : 0;
}
// The id of an argument text: one JSON object, e.g. "{\"epoch\": 3}".
static inline uint32_t ts_app_intern_args(const char* json_object) {
  const TracesmithAppApi* api = ts_app_api();
  return api && json_object ? api->intern(json_object, strlen(json_object), 1) : 0;
}

static inline void ts_app_counter(uint32_t name, double value) {
  const TracesmithAppApi* api = ts_app_capturing();
  if (api) api->counter(name, value);
}
static inline void ts_app_instant(uint32_t name, uint32_t args) {
  const TracesmithAppApi* api = ts_app_capturing();
  if (api) api->instant(name, args);
}
// A range: begin returns its start (0 when not capturing), end records it.
static inline uint64_t ts_app_range_begin(void) {
  const TracesmithAppApi* api = ts_app_capturing();
  return api ? api->now() : 0;
}
static inline void ts_app_range_end(uint32_t name, uint32_t args, uint64_t start_ns) {
  const TracesmithAppApi* api = start_ns ? ts_app_capturing() : NULL;
  if (api) api->range(name, args, start_ns);
}

#ifdef __cplusplus
}  // extern "C"

namespace tracesmith::app {

// A range from construction to destruction on the calling thread.
class ScopedRange {
 public:
  explicit ScopedRange(uint32_t name, uint32_t args = 0)
      : name_(name), args_(args), start_(ts_app_range_begin()) {}
  ~ScopedRange() { ts_app_range_end(name_, args_, start_); }
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  uint32_t name_, args_;
  uint64_t start_;
};

}  // namespace tracesmith::app

#define TS_APP_CONCAT2_(a, b) a##b
#define TS_APP_CONCAT_(a, b) TS_APP_CONCAT2_(a, b)
// A scoped range named by a string literal (interned once per call site).
#define TRACESMITH_RANGE(name)                                                            \
  static const uint32_t TS_APP_CONCAT_(ts_app_range_id_, __LINE__) = ts_app_intern(name); \
  ::tracesmith::app::ScopedRange TS_APP_CONCAT_(                                          \
      ts_app_range_, __LINE__)(TS_APP_CONCAT_(ts_app_range_id_, __LINE__))
#endif  // __cplusplus

// A counter / an instant named by a string literal, the name interned once per
// call site (C: on the first call that captures; C++: on the first call).
#define TS_APP_INTERNED_(name, call)                                       \
  do {                                                                     \
    static uint32_t ts_app_id_;                                            \
    if (ts_app_capturing()) {                                              \
      uint32_t ts_app_n_ = __atomic_load_n(&ts_app_id_, __ATOMIC_RELAXED); \
      if (!ts_app_n_) {                                                    \
        ts_app_n_ = ts_app_intern(name);                                   \
        __atomic_store_n(&ts_app_id_, ts_app_n_, __ATOMIC_RELAXED);        \
      }                                                                    \
      call;                                                                \
    }                                                                      \
  } while (0)
#define TRACESMITH_COUNTER(name, value) \
  TS_APP_INTERNED_(name, ts_app_counter(ts_app_n_, (double)(value)))
#define TRACESMITH_INSTANT(name) TS_APP_INTERNED_(name, ts_app_instant(ts_app_n_, 0))

#endif  // TRACESMITH_APP_H_
