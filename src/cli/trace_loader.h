// Reading traces for a command, and what every command does about damage in
// them: without --strict, a warning on stderr that names the file, each
// damaged byte range, why, and what was skipped, after which the command
// goes on with the readable part; with --strict, an error (exit 1, nothing
// written). The messages come from format::ReadReport (Headline, Describe).
#pragma once

#include <string>

#include "args.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::cli {

// Adds --strict to a command that reads traces.
void AddStrictFlag(Cmd* cmd, bool* strict);

// Adds the analysis window of `analyze` and `report` (--from, --to, --nvtx,
// --steps, --whole, --with-warmup) to `load`, which defaults to the active
// region after the warm-up (LoadOptions::steady_state).
void AddWindowOptions(Cmd* cmd, analysis::LoadOptions* load);

// After reading `path`: OK when it is clean. Damaged: with `strict` the
// error to report (ReadReport::DamageStatus); otherwise prints
//   tracesmith: warning: <path> is damaged (N of M bytes readable, K events
//   skipped); <doing> only its readable part:
//   byte <offset> (0x..), <length> bytes: <what> (<rows> <kind> events skipped)
// and returns OK. `doing` says what the command does: "analysing", "exporting".
Status CheckDamage(const std::string& path, const format::ReadReport& report, bool strict,
                   const char* doing);

}  // namespace tracesmith::cli
