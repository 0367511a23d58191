// What a long command is doing, on a terminal: one line on stderr rewritten
// in place ("tracesmith: analyze reading run.sbt 42% (3.1 s)"), refreshed 4
// times a second by a ticker thread (a phase of a 10 M-event trace lasts
// seconds without a call in between), shown only after half a second, never
// when stderr is not a terminal or with --quiet, and erased when done (before
// the command prints its result).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tracesmith::cli {

class ProgressLine {
 public:
  // `command`: the command's name as the line starts ("analyze").
  ProgressLine(std::string command, bool quiet);
  ~ProgressLine() { Done(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The phase now; `fraction` in [0, 1] adds a percentage (< 0: none).
  void Show(std::string_view phase, double fraction = -1);
  // Stops the ticker and erases the line (idempotent): before anything else
  // is printed (a warning, the result). A later Show() shows it again.
  void Done();
  bool on() const { return on_; }

 private:
  void Tick();
  void PrintLocked();

  const std::string command_;
  const bool on_;
  const double start_;
  const double delay_;  // seconds before the line shows
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread ticker_;
  std::string phase_;
  bool stop_ = false, shown_ = false;
};

}  // namespace tracesmith::cli
