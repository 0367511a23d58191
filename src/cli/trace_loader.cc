#include "trace_loader.h"

#include <cstdio>

#include "command.h"

#include "tracesmith/format/sbt.h"

namespace tracesmith::cli {

void AddStrictFlag(Cmd* cmd, bool* strict) {
  cmd->add_flag("--strict", *strict,
                "Fail (exit 1, write nothing) if a trace is damaged; without it, damage is a "
                "warning and the readable part is used");
}

void AddWindowOptions(Cmd* cmd, analysis::LoadOptions* load) {
  load->active_region = true;  // start-up and teardown reported apart (--whole: not)
  load->steady_state = true;   // and the warm-up (--with-warmup: not)
  cmd->add_option("--from", load->from,
                  "Start of the window, relative to the trace start (e.g. 2ms)");
  cmd->add_option("--to", load->to, "End of the window, relative to the trace start (e.g. 1.5s)");
  cmd->add_option("--nvtx", load->nvtx,
                  "Only work issued inside NVTX ranges with this name (on their thread)");
  cmd->add_option("--steps,--step", load->steps,
                  "Only these steps (iterations), as numbered in analyze's Steps table: N or A:B");
  cmd->add_flag(
      "--whole", load->whole,
      "The whole trace; by default the window runs from the first kernel to the last GPU "
      "operation, and start-up (process start, context creation, module loading) and teardown "
      "are reported apart");
  cmd->add_flag_callback(
      "--with-warmup", [load] { load->steady_state = false; },
      "Keep the warm-up in the window; by default, when steps are detected and the first ones "
      "are outliers (the first iteration's one-time work: autotuning, lazy loading, allocator "
      "growth), the window starts after them and the warm-up is reported apart");
}

Status CheckDamage(const std::string& path, const format::ReadReport& report, bool strict,
                   const char* doing) {
  if (report.clean()) return OkStatus();
  if (strict) return report.DamageStatus(path);
  std::fprintf(stderr, "tracesmith: warning: %s; %s only its readable part:\n%s",
               report.Headline(path).c_str(), doing, report.Describe().c_str());
  return OkStatus();
}

int ReportError(const Status& status) {
  std::fprintf(stderr, "tracesmith: error: %s\n", status.message().c_str());
  return ExitCodeFor(status.code());
}

}  // namespace tracesmith::cli
