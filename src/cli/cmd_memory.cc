// `tracesmith memory FILE`: where the GPU memory went — peak per device with
// its owners and call sites, leaks, churn, what was live at an instant.
#include <iostream>

#include "commands.h"
#include "trace_loader.h"
#include "tracesmith/analysis/memory_report.h"

namespace tracesmith::cli {
namespace {

struct MemoryCliOptions {
  std::string path;
  analysis::MemoryReportOptions report;
  bool json = false;
  bool strict = false;
};

int RunMemory(const MemoryCliOptions& o) {
  analysis::MemoryReport report;
  format::ReadReport damage;
  Status st = analysis::BuildMemoryReport(o.path, o.report, &report, &damage);
  if (st.ok()) st = CheckDamage(o.path, damage, o.strict, "analysing");
  if (!st.ok()) return ReportError(st);
  if (o.json)
    analysis::WriteMemoryJson(report, std::cout);
  else
    analysis::WriteMemoryText(report, o.report, std::cout);
  std::cout.flush();
  return std::cout ? kExitOk : ReportError(IoError("writing the report to stdout failed"));
}

}  // namespace

void AddMemoryCommand(CLI::App& app, CommandList& commands) {
  auto* cmd = app.add_subcommand(
      "memory", "Where GPU memory went: peak per device with owners and call sites, leaks, churn");
  auto o = std::make_shared<MemoryCliOptions>();
  cmd->add_option("file", o->path, "SBT trace file")->required();
  cmd->add_flag("--json", o->json, "Machine-readable JSON instead of the text report");
  cmd->add_option("--at", o->report.at,
                  "Also show what was live at this time, relative to the trace start (e.g. 2.5s)");
  cmd->add_option("--top", o->report.top, "Rows per table")->default_val(10);
  cmd->add_option("--bins", o->report.bins, "Points of the live-bytes summary")->default_val(60);
  AddStrictFlag(cmd, &o->strict);
  commands.emplace_back(cmd, [o] { return RunMemory(*o); });
}

}  // namespace tracesmith::cli
