// `tracesmith timeline RUN`: an ASCII timeline per stream that fits the
// terminal, zoomable with --from/--to; a job's traces (job_loader.h) on one.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "job_loader.h"
#include "trace_loader.h"
#include "tracesmith/analysis/ascii_timeline.h"

namespace tracesmith::cli {
namespace {

struct TimelineCliOptions {
  RunArgs run;
  std::string from, to;
  int width = 0;
  bool no_host = false;
  bool strict = false;
};

// The terminal's width: the tty, then $COLUMNS, then 100 (pipes, CI logs).
int TerminalWidth() {
  struct winsize ws {};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) > 0) return std::atoi(c);
  return 100;
}

int RunTimeline(const TimelineCliOptions& o) {
  // Streamed from the file (bounded memory), not loaded into a CompactTrace.
  analysis::AsciiTimelineFileOptions fo;
  fo.from = o.from;
  fo.to = o.to;
  fo.timeline.width = o.width > 0 ? o.width : TerminalWidth();
  fo.timeline.host_rows = !o.no_host;
  auto run = OpenRunSource(o.run, o.strict, "showing");
  if (!run.ok()) return ReportError(run.status());
  std::string text;
  if (Status st = ReadRun(*run, o.strict, "showing",
                          [&](format::TraceSource& source, format::ReadReport* damage) {
                            return analysis::RenderAsciiTimelineFile(source, fo, &text, damage);
                          });
      !st.ok())
    return ReportError(st);
  std::fputs(text.c_str(), stdout);
  return kExitOk;
}

}  // namespace

void AddTimelineCommand(Cmd& app, CommandList& commands) {
  auto* cmd = app.add_subcommand("timeline", "ASCII timeline of a trace, one row per stream");
  auto o = std::make_shared<TimelineCliOptions>();
  AddRunArguments(cmd, &o->run, "The trace to show");
  cmd->add_option("--from", o->from, "Start of the view, relative to the trace start (e.g. 2ms)");
  cmd->add_option("--to", o->to, "End of the view, relative to the trace start (e.g. 5ms)");
  cmd->add_option("--width", o->width, "Characters per line (default: the terminal's width)");
  cmd->add_flag("--no-host", o->no_host, "Leave out the host thread rows");
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunTimeline(*o); });
}

}  // namespace tracesmith::cli
