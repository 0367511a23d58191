// ExportSbtFile for ExportFormat::kDot (dot_export.cc).
#pragma once

#include <string>

#include "tracesmith/export/export.h"

namespace tracesmith::exporter {

StatusOr<ExportStats> ExportDotFile(format::TraceSource& source, const std::string& out_path,
                                    const ExportOptions& options, format::ReadReport* report);

}  // namespace tracesmith::exporter
