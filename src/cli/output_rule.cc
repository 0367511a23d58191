#include "output_rule.h"

#include <sys/stat.h>

#include "tracesmith/base/atomic_file.h"

namespace tracesmith::cli {

Status CheckOutputFile(const std::string& out, std::span<const std::string> inputs, bool force) {
  RETURN_IF_ERROR(CheckOutputPath(out, inputs));
  struct stat st;
  if (!force && ::stat(out.c_str(), &st) == 0)
    return FailedPrecondition(out + ": file exists (use --force to overwrite)");
  return OkStatus();
}

void AddForceFlag(CLI::App* cmd, bool* force) {
  cmd->add_flag("--force", *force, "Replace the output file if it exists");
}

}  // namespace tracesmith::cli
