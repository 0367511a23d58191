// The "dot" export format: Graphviz of the dependency graph
// (analysis/dependency_graph.h), critical path in red. Unlike the streamed
// formats it needs the whole (compact) trace of the window, so it is exported
// from an SBT file or another trace source only; big traces are cut to the earliest node_limit
// nodes.
#include "dot_export.h"

#include "tracesmith/analysis/dependency_graph.h"
#include "tracesmith/analysis/report.h"
#include "tracesmith/base/atomic_file.h"

namespace tracesmith::exporter {

StatusOr<ExportStats> ExportDotFile(format::TraceSource& source, const std::string& out_path,
                                    const ExportOptions& options, format::ReadReport* report) {
  const std::vector<std::string> inputs = source.files();
  analysis::CompactTrace trace;
  analysis::LoadOptions load;
  load.from = options.from;
  load.to = options.to;
  format::ReadReport damage;
  RETURN_IF_ERROR(analysis::LoadCompactTrace(source, load, &trace, &damage));
  if (options.refuse_damaged_input) RETURN_IF_ERROR(damage.DamageStatus(source.name()));
  if (report) *report = damage;
  analysis::DotOptions dot;
  dot.node_limit = options.dot_node_limit;
  ExportStats stats;
  ASSIGN_OR_RETURN(stats.bytes, WriteFileAtomically(out_path, inputs, [&](std::ostream& file) {
                     return analysis::WriteDot(trace, dot, file);
                   }));
  return stats;
}

}  // namespace tracesmith::exporter
