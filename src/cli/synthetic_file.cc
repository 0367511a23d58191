#include "synthetic_file.h"

#include "tracesmith/format/sbt_writer.h"

namespace tracesmith::cli {

Status WriteSyntheticTraceFile(const model::SyntheticOptions& options, const std::string& path) {
  model::SyntheticTraceGenerator gen(options);
  ASSIGN_OR_RETURN(auto writer, format::SbtWriter::Open(path));
  writer->AdoptStrings(gen.strings());
  model::Trace batch;
  while (gen.Next(&batch)) {
    model::ForEachRecordType([&]<typename T>() {
      auto& rows = batch.Rows<T>();
      writer->AppendRows(rows.data(), rows.size());
      rows.clear();
    });
    RETURN_IF_ERROR(writer->status());
  }
  return writer->Close();
}

}  // namespace tracesmith::cli
