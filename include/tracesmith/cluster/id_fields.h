// Which id space each id field of the record kinds belongs to, for merging
// several traces into one file (merge.h): each trace numbers its strings,
// stack nodes, frames, mappings and flows from 1, and its processes by their
// OS pids, so rows copied from one file to another must have these ids
// translated, while ids that mean something only inside one process
// (correlation ids, streams, threads) stay as they are.
//
// The rules are by field name (a name means the same thing in every kind:
// name_id is always a string). Every field of every kind in
// model/records.h whose name looks like an id ("*_id", "pid", "tid",
// "*_pid", "*_tid") must have a rule: id_fields.cc checks it at compile time
// and tests/cluster checks it again, so a new id field cannot be copied
// unchanged by mistake.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracesmith/model/field.h"

namespace tracesmith::cluster {

enum class IdSpace : uint8_t {
  kValue,       // not a reference into the trace (an OS value): kept
  kString,      // index into the file's StringTable: translated string by string
  kStackNode,   // 1-based position in the StackNode table: the row's position in the output
  kFrame,       // 1-based position in the Frame table: the row's position in the output
  kMapping,     // Mapping::mapping_id, defined by the Mapping rows: renumbered per input
  kFlow,        // Kineto "fwdbwd" flow ids, unique within one file: renumbered per input
  kPid,         // a process: kept, unless another input already has that pid
  kPerProcess,  // unique only together with its pid (correlation, stream, tid...): kept
};
const char* IdSpaceName(IdSpace space);

struct IdFieldRule {
  const char* field;
  IdSpace space;
};
// The rules (one per field name).
std::span<const IdFieldRule> IdFieldRules();

// True for a field name that names an id: "*_id", "pid", "tid", "*_pid", "*_tid".
constexpr bool LooksLikeId(std::string_view name) {
  return name == "pid" || name == "tid" || name.ends_with("_id") || name.ends_with("_pid") ||
         name.ends_with("_tid");
}

// The space of field `name`: its rule's; kValue for a name that is not
// id-like; nullopt for an id-like name without a rule.
std::optional<IdSpace> ClassifyField(std::string_view name,
                                     std::span<const IdFieldRule> rules = IdFieldRules());

// The id-like fields of `fields` (a record kind's, labelled `label`) that
// have no rule, as "label.field".
std::vector<std::string> UnclassifiedIdFields(const char* label,
                                              std::span<const model::FieldDesc> fields,
                                              std::span<const IdFieldRule> rules = IdFieldRules());
// Every record kind's unclassified id fields (empty when the rules are complete).
std::vector<std::string> UnclassifiedRecordIdFields();

}  // namespace tracesmith::cluster
