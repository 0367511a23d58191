// libtracesmith-app-fake.so: a stand-in for libtracesmith-inject.so on
// machines without a GPU, for the tests of include/tracesmith/app/app.h and of the
// Python API (tracesmith.counter / instant / range). It exports what the real
// library exports for them — tracesmith_app_api (app_c_api.cc, the same file)
// and the tracesmith_session_* C API of in-process capture — but its capture
// records only the program's own events (AppEvents, CLOCK_MONOTONIC) into an
// SBT file: a process row, the app rows, the capture.app.* stats.
//
// As `tracesmith profile` would: with TRACESMITH_APP_FAKE_OUTPUT=PATH the
// capture starts when the library is loaded and writes PATH at exit.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "tracesmith/capture/app_events.h"
#include "tracesmith/format/sbt_writer.h"

#define TS_C_API extern "C" __attribute__((visibility("default")))

namespace {

using tracesmith::capture::AppEvents;
using tracesmith::capture::AppEventWriter;

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

struct FakeCapture {
  std::string path;
  std::unique_ptr<AppEventWriter> writer;
  std::thread collector;
  std::atomic<bool> stop{false};
};

// Plain pointers, never destroyed by a static destructor: the capture that
// StartFromEnvironment starts is stopped by its atexit handler, which may run
// after this file's static destructors.
// (The library's constructor may run before this file's dynamic initialisation.)
std::mutex& Mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
FakeCapture* g_capture = nullptr;

int Fail(const std::string& message, char* error, size_t len) {
  if (error && len) std::snprintf(error, len, "%s", message.c_str());
  return -1;
}

int Start(const std::string& path, char* error, size_t error_len) {
  std::lock_guard<std::mutex> lock(Mu());
  if (g_capture) return Fail("a capture is already running in this process", error, error_len);
  if (path.empty()) return Fail("no TRACESMITH_OUTPUT", error, error_len);
  auto c = std::make_unique<FakeCapture>();
  c->path = path;
  c->writer = std::make_unique<AppEventWriter>(uint32_t(getpid()));
  AppEvents::Get().Begin(&MonotonicNs);
  FakeCapture* raw = c.get();
  c->collector = std::thread([raw] {
    while (!raw->stop.load()) {
      raw->writer->Collect();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  g_capture = c.release();
  return 0;
}

int Stop(char* path_out, size_t path_len, char* error, size_t error_len) {
  std::lock_guard<std::mutex> lock(Mu());
  if (!g_capture) return Fail("no capture is running", error, error_len);
  std::unique_ptr<FakeCapture> c(g_capture);
  g_capture = nullptr;
  AppEvents::Get().End();
  c->stop = true;
  c->collector.join();
  c->writer->Collect();
  if (path_out && path_len) std::snprintf(path_out, path_len, "%s", c->path.c_str());
  auto sbt = tracesmith::format::SbtWriter::Open(c->path);
  if (!sbt.ok()) return Fail(sbt.status().message(), error, error_len);
  tracesmith::format::SbtWriter& w = **sbt;
  tracesmith::model::Process p;
  p.pid = uint32_t(getpid());
  p.name_id = w.InternString("app_fake_capture");
  w.Append(p);
  c->writer->Write(w);
  c->writer->AddStats([&](const char* name, uint64_t value, uint8_t severity) {
    tracesmith::model::Stat s;
    s.value = int64_t(value);
    s.name_id = w.InternString(name);
    s.pid = p.pid;
    s.severity = value ? severity : uint8_t(tracesmith::model::kStatInfo);
    w.Append(s);
  });
  tracesmith::Status st = w.Close();
  return st.ok() ? 0 : Fail(st.message(), error, error_len);
}

// TRACESMITH_OUTPUT from the session's "NAME=VALUE" lines.
std::string OutputOf(const char* options) {
  std::string text = options ? options : "";
  const std::string key = "TRACESMITH_OUTPUT=";
  size_t at = text.find(key);
  if (at == std::string::npos) return "";
  size_t end = text.find('\n', at);
  return text.substr(at + key.size(), end == std::string::npos ? end : end - at - key.size());
}

__attribute__((constructor)) void StartFromEnvironment() {
  const char* out = std::getenv("TRACESMITH_APP_FAKE_OUTPUT");
  if (!out || !*out) return;
  char error[256];
  if (Start(out, error, sizeof(error)) != 0) {
    std::fprintf(stderr, "app_fake_capture: %s\n", error);
    return;
  }
  std::atexit([] { Stop(nullptr, 0, nullptr, 0); });
}

}  // namespace

TS_C_API int tracesmith_session_start(const char* options, char* error, size_t error_len) {
  return Start(OutputOf(options), error, error_len);
}
TS_C_API int tracesmith_session_flush(char*, size_t) { return 0; }
TS_C_API int tracesmith_session_stop(char* path, size_t path_len, char* error, size_t error_len) {
  return Stop(path, path_len, error, error_len);
}
TS_C_API int tracesmith_session_running() {
  std::lock_guard<std::mutex> lock(Mu());
  return g_capture ? 1 : 0;
}
