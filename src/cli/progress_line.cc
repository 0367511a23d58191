#include "progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tracesmith/base/status.h"

namespace tracesmith::cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

// Half a second: a short command shows nothing. TRACESMITH_PROGRESS_DELAY_S
// changes it (tests show the line at once).
double ProgressDelay() {
  const char* v = std::getenv("TRACESMITH_PROGRESS_DELAY_S");
  return v ? std::atof(v) : 0.5;
}

ProgressLine::ProgressLine(std::string command, bool quiet)
    : command_(std::move(command)),
      on_(!quiet && ::isatty(STDERR_FILENO) == 1),
      start_(Now()),
      delay_(ProgressDelay()) {}

void ProgressLine::Show(std::string_view phase, double fraction) {
  if (!on_) return;
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = false;  // after Done(): shown again (a warning was printed in between)
  phase_ = std::string(phase);
  if (fraction >= 0) phase_ += StrFormat(" %d%%", int(std::min(fraction, 1.0) * 100));
  PrintLocked();
  if (!ticker_.joinable()) ticker_ = std::thread([this] { Tick(); });
}

void ProgressLine::Done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  if (!shown_) return;
  shown_ = false;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

void ProgressLine::Tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(250));
    if (!stop_) PrintLocked();
  }
}

void ProgressLine::PrintLocked() {
  const double elapsed = Now() - start_;
  if (elapsed < delay_) return;
  shown_ = true;
  std::fprintf(stderr, "\rtracesmith: %s %s (%.1f s)\033[K", command_.c_str(), phase_.c_str(),
               elapsed);
  std::fflush(stderr);
}

}  // namespace tracesmith::cli
