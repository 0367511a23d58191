// The id translation of one input of a merge (run_source.cc): from the ids of
// the input file to those of the output, field by field as id_fields.h
// classifies them.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "tracesmith/cluster/id_fields.h"
#include "tracesmith/model/string_table.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::cluster::internal {

// What the output holds so far, across inputs.
struct OutputTables {
  uint32_t frames = 0;                    // Frame rows numbered (written or about to be)
  uint32_t nodes = 0;                     // StackNode rows numbered
  uint32_t mappings = 0;                  // mapping ids handed out
  uint64_t flows = 0;                     // flow ids handed out
  std::set<uint32_t> known_pids;          // named by any input (so never handed out)
  std::map<uint32_t, size_t> taken_pids;  // output pid -> the input that has it
  // Pids handed to a process whose own pid an earlier input has: from
  // 2^22 (PID_MAX_LIMIT, above every Linux pid) up, past any pid an input names.
  uint32_t next_fresh_pid = 1u << 22;
  uint32_t FreshPid();
};

class InputRemap {
 public:
  // `strings`: the output's string table, which every input string is
  // interned into as it arrives (SetSource).
  InputRemap(OutputTables* out, model::StringTable* strings, size_t input_index);

  // The reader's batch: the input's strings and metadata read so far. Set
  // before every Apply (the batch grows as the input is read). The strings
  // it holds that are new are interned into the output at once, in the
  // input's id order: the output's ids then do not depend on which rows a
  // pass decodes (a pass of some kinds, SbtReader::EventKindFilter, and a
  // pass of all give every string the same id). Its new Frame and StackNode
  // rows get the output's next positions, in order: the caller appends them
  // to the output before the next SetSource (inputs read in turn interleave
  // their rows there, so an input's rows are not one block).
  void SetSource(const model::Trace* batch);

  // The output pid of input pid `pid`: its own, unless an earlier input has
  // it (then a fresh one). Decided once per pid, on first use.
  uint32_t Pid(uint32_t pid);
  // Input pids that were given another pid, with the input that had it first.
  struct Renumbered {
    uint32_t pid, out_pid;
    size_t first_input;
  };
  const std::vector<Renumbered>& renumbered() const { return renumbered_; }
  const std::map<uint32_t, uint32_t>& pids() const { return pids_; }

  // Translates every id field of `row` (id_fields.h) in place.
  template <typename T>
  void Apply(T* row) {
    for (const Field& f : FieldsOf<T>()) {
      const uint64_t v = model::LoadField(row, f.desc);
      if (v != 0 || f.space == IdSpace::kPid) model::StoreField(row, f.desc, Map(f.space, v));
    }
  }

  // References that pointed past the input's tables (written as 0).
  uint64_t dangling() const { return dangling_; }
  // Flow ids that found no output id left (more than 2^32 - 1 flows in the
  // run): those flows left out.
  uint64_t flow_overflow() const { return flow_overflow_; }

 private:
  struct Field {
    model::FieldDesc desc;
    IdSpace space;
  };
  // The fields of T that need translation, from its field list.
  template <typename T>
  static const std::vector<Field>& FieldsOf() {
    static const std::vector<Field> fields = [] {
      std::vector<Field> v;
      using Traits = model::RecordTraits<T>;
      for (size_t i = 0; i < Traits::kNumFields; ++i) {
        // Every id-like field has a rule (static_assert in id_fields.cc).
        const IdSpace s = ClassifyField(Traits::kAllFields[i].name).value_or(IdSpace::kValue);
        if (s != IdSpace::kValue && s != IdSpace::kPerProcess)
          v.push_back(Field{Traits::kAllFields[i], s});
      }
      return v;
    }();
    return fields;
  }
  uint64_t Map(IdSpace space, uint64_t v);
  uint32_t String(uint32_t id);
  uint32_t Position(uint64_t id, const std::vector<uint32_t>& ids);
  uint32_t Mapping(uint32_t id);
  uint64_t Flow(uint64_t id);

  OutputTables* out_;
  model::StringTable* strings_out_;
  size_t input_;
  const model::Trace* in_ = nullptr;
  // Input position - 1 -> output position (1-based ids both).
  std::vector<uint32_t> frames_, nodes_;
  std::unordered_map<uint64_t, uint32_t> flows_;  // input flow id -> output id
  std::vector<uint32_t> strings_;                 // input id -> output id + 1 (0: not yet)
  uint32_t strings_seen_ = 1;                     // input ids below this are interned (or gaps)
  std::unordered_map<uint32_t, uint32_t> mappings_;
  std::map<uint32_t, uint32_t> pids_;
  std::vector<Renumbered> renumbered_;
  uint64_t dangling_ = 0;
  uint64_t flow_overflow_ = 0;
};

}  // namespace tracesmith::cluster::internal
