#include <algorithm>

#include "tracesmith/export/job_export.h"

namespace tracesmith::exporter {

RunProcessScan ScanRunProcesses(std::span<const std::string> files) {
  RunProcessScan scan;
  for (const std::string& f : files) {
    auto reader = format::SbtReader::Open(f);
    if (!reader.ok()) {
      ++scan.processes;
      continue;
    }
    size_t n = 1;
    (void)(*reader)->Stream([](const model::Trace&, model::TableKind) { return OkStatus(); },
                            [&](const model::Trace& meta) {
                              n = std::max<size_t>(1, meta.Rows<model::Process>().size());
                              return OkStatus();
                            },
                            [](model::TableKind) { return false; });
    scan.processes += n;
    if (!(*reader)->report().clean()) scan.damage.emplace_back(f, (*reader)->report());
  }
  return scan;
}

bool ExportsAsJob(ExportFormat format, const RunProcessScan& scan) {
  return format == ExportFormat::kPerfetto && scan.processes > 1;
}

}  // namespace tracesmith::exporter
