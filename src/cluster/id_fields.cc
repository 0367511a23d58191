#include "tracesmith/cluster/id_fields.h"

#include "tracesmith/model/records.h"

namespace tracesmith::cluster {
namespace {

// Field names mean the same in every record kind (records.h conventions).
constexpr IdFieldRule kRules[] = {
    // Strings (records.h: "*_id fields ending in a string").
    {"name_id", IdSpace::kString},
    {"demangled_id", IdSpace::kString},
    {"domain_id", IdSpace::kString},
    {"uuid_id", IdSpace::kString},
    {"cmdline_id", IdSpace::kString},
    {"hostname_id", IdSpace::kString},
    {"path_id", IdSpace::kString},
    {"build_id_id", IdSpace::kString},
    {"function_id", IdSpace::kString},
    {"file_id", IdSpace::kString},
    {"key_id", IdSpace::kString},
    {"value_id", IdSpace::kString},
    {"stall_id", IdSpace::kString},
    {"text_id", IdSpace::kString},
    {"label_id", IdSpace::kString},
    {"unit_id", IdSpace::kString},
    {"args_id", IdSpace::kString},
    // Positions in the file's stack tables, and the mappings frames point into.
    {"stack_id", IdSpace::kStackNode},
    {"parent_id", IdSpace::kStackNode},  // StackNode: its parent node
    {"frame_id", IdSpace::kFrame},
    {"mapping_id", IdSpace::kMapping},
    // An imported torch trace's forward->backward flows: ids of the file.
    {"flow_out_id", IdSpace::kFlow},
    {"flow_in_id", IdSpace::kFlow},
    {"pid", IdSpace::kPid},
    // The OS's pid of the process's parent, which need not be in the trace,
    // and the device's PCI bus number: values, not references.
    {"parent_pid", IdSpace::kValue},
    {"pci_bus_id", IdSpace::kValue},
    // An NVTX payload schema's number, the library's own (NvtxPayloadEvent).
    {"schema_id", IdSpace::kValue},
    // Handed out by CUDA, CUPTI, NVTX or the framework inside one process;
    // the readers key them by pid (analysis::CorrelationIndex, GpuLaneKey).
    {"tid", IdSpace::kPerProcess},
    {"fwd_thread_id", IdSpace::kPerProcess},
    {"correlation_id", IdSpace::kPerProcess},
    {"external_id", IdSpace::kPerProcess},
    {"event_id", IdSpace::kPerProcess},
    {"device_id", IdSpace::kPerProcess},
    {"src_device_id", IdSpace::kPerProcess},
    {"dst_device_id", IdSpace::kPerProcess},
    {"context_id", IdSpace::kPerProcess},
    {"stream_id", IdSpace::kPerProcess},
    {"graph_id", IdSpace::kPerProcess},
    {"graph_node_id", IdSpace::kPerProcess},
    {"origin_node_id", IdSpace::kPerProcess},
    {"range_id", IdSpace::kPerProcess},
    {"record_function_id", IdSpace::kPerProcess},
    {"module_id", IdSpace::kPerProcess},
    {"metric_id", IdSpace::kPerProcess},
};

constexpr std::optional<IdSpace> Lookup(std::string_view name, std::span<const IdFieldRule> rules) {
  for (const IdFieldRule& r : rules)
    if (name == r.field) return r.space;
  if (!LooksLikeId(name)) return IdSpace::kValue;
  return std::nullopt;
}

template <typename T>
constexpr bool KindClassified() {
  for (size_t i = 0; i < model::RecordTraits<T>::kNumFields; ++i)
    if (!Lookup(model::RecordTraits<T>::kAllFields[i].name, kRules)) return false;
  return true;
}

constexpr bool AllKindsClassified() {
  bool ok = true;
  model::ForEachRecordType([&]<typename T>() { ok = ok && KindClassified<T>(); });
  return ok;
}

// A field added to records.h whose name says it is an id needs a rule above
// (tests/cluster names the field that lacks one).
static_assert(AllKindsClassified(),
              "a record field named like an id has no IdSpace rule in cluster/id_fields.cc");

}  // namespace

const char* IdSpaceName(IdSpace space) {
  switch (space) {
    case IdSpace::kValue:
      return "value";
    case IdSpace::kString:
      return "string";
    case IdSpace::kStackNode:
      return "stack node";
    case IdSpace::kFrame:
      return "frame";
    case IdSpace::kMapping:
      return "mapping";
    case IdSpace::kFlow:
      return "flow";
    case IdSpace::kPid:
      return "pid";
    case IdSpace::kPerProcess:
      return "per-process";
  }
  return "?";
}

std::span<const IdFieldRule> IdFieldRules() { return kRules; }

std::optional<IdSpace> ClassifyField(std::string_view name, std::span<const IdFieldRule> rules) {
  return Lookup(name, rules);
}

std::vector<std::string> UnclassifiedIdFields(const char* label,
                                              std::span<const model::FieldDesc> fields,
                                              std::span<const IdFieldRule> rules) {
  std::vector<std::string> out;
  for (const model::FieldDesc& f : fields)
    if (!Lookup(f.name, rules)) out.push_back(std::string(label) + "." + f.name);
  return out;
}

std::vector<std::string> UnclassifiedRecordIdFields() {
  std::vector<std::string> out;
  model::ForEachRecordType([&]<typename T>() {
    using Traits = model::RecordTraits<T>;
    for (std::string& f :
         UnclassifiedIdFields(Traits::kLabel, std::span(Traits::kAllFields, Traits::kNumFields)))
      out.push_back(std::move(f));
  });
  return out;
}

}  // namespace tracesmith::cluster
