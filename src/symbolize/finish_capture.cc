#include "tracesmith/symbolize/finish_capture.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "tracesmith/base/file_util.h"
#include "tracesmith/format/job_file_names.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/symbolize/sass.h"
#include "tracesmith/symbolize/symbolizer.h"

namespace tracesmith::symbolize {
namespace {

using Clock = std::chrono::steady_clock;

// Whether any native frame of `trace` lacks a name (what Symbolize would look up).
uint64_t UnnamedNativeFrames(const model::Trace& trace) {
  uint64_t n = 0;
  for (const model::Frame& f : trace.Rows<model::Frame>())
    n += f.kind == model::kFrameNative && f.mapping_id != 0 && f.function_id == 0;
  return n;
}

}  // namespace

FinishReport FinishCapture(const std::string& path, const FinishOptions& options) {
  FinishReport out;
  const Clock::time_point t0 = Clock::now();
  // Seconds left of the time limit (a large number without one).
  auto left = [&] {
    if (options.time_limit_s <= 0) return 1e9;
    return options.time_limit_s - std::chrono::duration<double>(Clock::now() - t0).count();
  };
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return out;
  const std::string cubins = format::CubinDirOf(path);
  struct stat dir;
  const bool sass = stat(cubins.c_str(), &dir) == 0 && S_ISDIR(dir.st_mode);
  const bool compiled = options.compiled_graphs && !options.compiled_graphs->empty();
  if (!options.names && !sass && !compiled) return out;
  const char* what = sass ? "symbols and SASS" : compiled ? "symbols and model lines" : "symbols";
  auto refuse = [&](const std::string& line) {
    out.names_incomplete = options.names;
    out.lines.push_back(line);
    return out;
  };
  if (uint64_t(st.st_size) > kFinishMaxBytes)
    return refuse(StrFormat("%s: %s, not rewritten here to add %s; run: tracesmith symbolize %s",
                            path.c_str(), HumanBytes(uint64_t(st.st_size)).c_str(), what,
                            path.c_str()));
  // Replay payloads (--replay-capture) are raw chunks that a model rewrite
  // would not carry over: such a trace is left as written.
  if (format::HasReplayPayloads(path))
    return refuse(
        StrFormat("%s holds replay payloads: not rewritten to add %s (tracesmith "
                  "symbolize %s -o OUT adds them to a copy without the payloads)",
                  path.c_str(), what, path.c_str()));
  format::ReadReport report;
  auto trace = format::ReadTraceFile(path, &report);
  if (!trace.ok() || !report.clean() || !report.indexed)
    return refuse(
        StrFormat("%s is unfinished or damaged: not rewritten to add %s (tracesmith "
                  "symbolize %s -o OUT can)",
                  path.c_str(), what, path.c_str()));
  std::vector<std::string> done;
  if (options.names) out.native_frames = UnnamedNativeFrames(*trace);
  if (out.native_frames) {
    SymbolizeOptions so;
    so.time_limit_s = options.time_limit_s > 0 ? std::max(left(), 1e-9) : 0;
    auto stats = Symbolize(&*trace, so);
    if (stats.ok()) {
      out.named_frames = stats->with_function;
      out.names_incomplete = stats->timed_out;
      if (stats->with_function)
        done.push_back(
            StrFormat("%llu of %llu native frames named%s",
                      static_cast<unsigned long long>(stats->with_function),
                      static_cast<unsigned long long>(stats->native_frames),
                      options.skip_option.empty()
                          ? ""
                          : (" (" + options.skip_option + ": leave them unnamed)").c_str()));
      if (stats->timed_out)
        out.lines.push_back(
            StrFormat("%s: %llu native frames left unnamed at the time limit (%.0f s): tracesmith "
                      "symbolize %s names them",
                      path.c_str(), static_cast<unsigned long long>(stats->frames_left),
                      options.time_limit_s, path.c_str()));
    } else {
      out.names_incomplete = true;
      out.lines.push_back(StrFormat("%s: native frames not named: %s", path.c_str(),
                                    stats.status().message().c_str()));
    }
  }
  bool sass_done = false;
  if (sass && left() <= 0) {
    out.lines.push_back(StrFormat(
        "%s: no SASS text: the time limit (%.0f s) was spent; tracesmith symbolize %s adds it",
        path.c_str(), options.time_limit_s, path.c_str()));
  } else if (sass) {
    SassOptions so;
    so.budget_s = std::min(so.budget_s, left());
    so.timeout_s = std::min(so.timeout_s, left());
    auto stats = AddSass(&*trace, cubins, so);
    if (!stats.ok()) {
      out.lines.push_back(
          StrFormat("%s: no SASS text: %s", path.c_str(), stats.status().message().c_str()));
    } else if (stats->instructions) {
      // Cubins left over the time budget stay for `tracesmith symbolize`.
      sass_done = !stats->cubins_skipped;
      std::string line = StrFormat(
          "SASS of %llu of %llu sampled instructions (%llu modules, "
          "%.1f s)",
          static_cast<unsigned long long>(stats->with_text),
          static_cast<unsigned long long>(stats->instructions),
          static_cast<unsigned long long>(stats->cubins), stats->seconds);
      if (stats->cubins_missing + stats->cubins_failed + stats->cubins_skipped)
        line += StrFormat("; %llu modules missing, %llu failed, %llu over the time budget%s%s",
                          static_cast<unsigned long long>(stats->cubins_missing),
                          static_cast<unsigned long long>(stats->cubins_failed),
                          static_cast<unsigned long long>(stats->cubins_skipped),
                          stats->first_error.empty() ? "" : ": ", stats->first_error.c_str());
      done.push_back(line);
    }
  }
  if (compiled) {
    const CompiledLinesStats c = AddCompiledLines(&*trace, *options.compiled_graphs);
    if (c.with_model + c.with_nodes)
      done.push_back(StrFormat(
          "torch.compile: model lines for %llu and graph nodes for %llu of %llu generated lines",
          static_cast<unsigned long long>(c.with_model),
          static_cast<unsigned long long>(c.with_nodes),
          static_cast<unsigned long long>(c.generated_lines)));
  }
  if (done.empty()) return out;
  if (Status w = format::WriteTraceFile(*trace, path); !w.ok()) {
    out.names_incomplete = options.names && out.native_frames;
    out.lines.push_back(
        StrFormat("%s: %s not written: %s", path.c_str(), what, w.ToString().c_str()));
    return out;
  }
  out.rewritten = true;
  // The cubins served their purpose once the SASS is in the trace.
  if (sass_done) std::filesystem::remove_all(cubins);
  for (const std::string& line : done) out.lines.push_back(path + ": " + line);
  return out;
}

}  // namespace tracesmith::symbolize
