// `tracesmith_app_api`, the one entry point of include/tracesmith/app/app.h (the
// program's own counters, instants and ranges), exported by
// libtracesmith-inject.so: the header and the Python package look it up at
// run time, so a program needs no linking with TraceSmith. The table's
// functions are AppEvents's (app_events.h); they record only while a capture
// runs (the AppEvents recorder of the CUPTI engine switches them on).
#include "tracesmith/app/app.h"
#include "tracesmith/capture/app_events.h"

namespace {

uint32_t Intern(const char* text, size_t len, int what) {
  return tracesmith::capture::AppEvents::Get().Intern(text, len, what != 0);
}
void Counter(uint32_t name, double value) {
  tracesmith::capture::AppEvents::Get().Counter(name, value);
}
void Instant(uint32_t name, uint32_t args) {
  tracesmith::capture::AppEvents::Get().Instant(name, args);
}
uint64_t Now() { return tracesmith::capture::AppEvents::Get().Now(); }
void Range(uint32_t name, uint32_t args, uint64_t start_ns) {
  tracesmith::capture::AppEvents::Get().Range(name, args, start_ns);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const TracesmithAppApi* tracesmith_app_api(
    uint32_t version) {
  static const TracesmithAppApi api = {TRACESMITH_APP_API_VERSION,
                                       sizeof(TracesmithAppApi),
                                       tracesmith::capture::AppEvents::Get().capturing_flag(),
                                       Intern,
                                       Counter,
                                       Instant,
                                       Now,
                                       Range};
  return version == TRACESMITH_APP_API_VERSION ? &api : nullptr;
}
