// The "dot" export format: Graphviz of the dependency graph
// (analysis/dependency_graph.h), critical path in red. Unlike the streamed
// formats it needs the whole (compact) trace of the window, so it is exported
// from an SBT file only; big traces are cut to the earliest node_limit nodes.
#include "dot_export.h"

#include <filesystem>
#include <fstream>

#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"

namespace tracesmith::exporter {

StatusOr<ExportStats> ExportDotFile(const std::string& sbt_path, const std::string& out_path,
                                    const ExportOptions& options, format::ReadReport* report) {
  const std::string inputs[] = {sbt_path};
  analysis::CompactTrace trace;
  analysis::LoadOptions load;
  load.from = options.from;
  load.to = options.to;
  format::ReadReport damage;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(sbt_path, load, &trace, &damage));
  if (options.refuse_damaged_input) RETURN_IF_ERROR(damage.DamageStatus(sbt_path));
  if (report) *report = damage;
  // Written beside `out_path` and renamed over it when complete (base/atomic_file.h).
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> dest, AtomicFile::Create(out_path, inputs));
  RETURN_IF_ERROR(dest->CloseFd());
  std::ofstream file(dest->temp_path(), std::ios::trunc | std::ios::binary);
  if (!file) return IoError(dest->temp_path() + ": cannot open for writing");
  analysis::DotOptions dot;
  dot.node_limit = options.dot_node_limit;
  RETURN_IF_ERROR(analysis::WriteDot(trace, dot, file));
  file.close();
  if (!file) return IoError(out_path + ": write failed");
  ExportStats stats;
  stats.bytes = uint64_t(std::filesystem::file_size(dest->temp_path()));
  RETURN_IF_ERROR(dest->Commit());
  return stats;
}

}  // namespace tracesmith::exporter
