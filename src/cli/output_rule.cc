#include "output_rule.h"

namespace tracesmith::cli {

void AddForceFlag(Cmd* cmd, bool* force) {
  cmd->add_flag("--force", *force, "Replace the output file if it exists");
}

}  // namespace tracesmith::cli
