// C entry points of the in-process capture (tracesmith::session::Session),
// exported by libtracesmith-inject.so for callers without C++: the Python
// package loads them with ctypes (python/tracesmith/_profile.py), so capture
// needs no extension module built for the interpreter's version.
//
// Options are the injection library's environment variables, one
// "NAME=VALUE" per line (capture_options.h: TRACESMITH_OUTPUT, _KINDS,
// _STACKS, ...), parsed by OptionsFromEnv as for `tracesmith profile`; the
// tuning knobs (CaptureTuning) come from the process's own environment.
// Errors: -1 and the message in `error` (NUL-terminated, truncated to fit).
// One capture at a time per process; the calls are serialised.
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tracesmith/capture/capture_options.h"
#include "tracesmith/session/session.h"

#define TS_C_API extern "C" __attribute__((visibility("default")))

namespace {

std::mutex g_mu;
std::unique_ptr<tracesmith::session::Session> g_session;

int Fail(const std::string& message, char* error, size_t error_len) {
  if (error && error_len) std::snprintf(error, error_len, "%s", message.c_str());
  return -1;
}

void Put(const std::string& text, char* out, size_t out_len) {
  if (out && out_len) std::snprintf(out, out_len, "%s", text.c_str());
}

}  // namespace

TS_C_API int tracesmith_session_start(const char* options, char* error, size_t error_len) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_session && g_session->running())
    return Fail("a capture is already running in this process (stop it first)", error, error_len);
  std::map<std::string, std::string> env;
  std::string text = options ? options : "";
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) return Fail("bad option line '" + line + "'", error, error_len);
    env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  auto parsed = tracesmith::capture::OptionsFromEnv(env);
  if (!parsed.ok()) return Fail(parsed.status().message(), error, error_len);
  // The tuning knobs are the process's, as for the injection library.
  parsed->tuning = tracesmith::capture::TuningFromProcessEnv();
  auto session = std::make_unique<tracesmith::session::Session>(*parsed);
  tracesmith::Status st = session->Start();
  if (!st.ok()) return Fail(st.message(), error, error_len);
  g_session = std::move(session);
  return 0;
}

TS_C_API int tracesmith_session_flush(char* error, size_t error_len) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_session || !g_session->running()) return Fail("no capture is running", error, error_len);
  tracesmith::Status st = g_session->Write();
  return st.ok() ? 0 : Fail(st.message(), error, error_len);
}

// Stops the capture and closes its file; `path` receives the file written.
TS_C_API int tracesmith_session_stop(char* path, size_t path_len, char* error, size_t error_len) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_session || !g_session->running()) return Fail("no capture is running", error, error_len);
  std::string out = g_session->output_path();
  tracesmith::Status st = g_session->Stop();
  Put(out, path, path_len);
  return st.ok() ? 0 : Fail(st.message(), error, error_len);
}

TS_C_API int tracesmith_session_running() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_session && g_session->running() ? 1 : 0;
}
