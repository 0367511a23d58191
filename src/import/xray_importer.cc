// XRay log -> TraceSmith trace. Each thread's calls (its blocks in TSC order)
// run through a call stack: an entry pushes, an exit or tail exit pops the
// nearest frame of the same function and becomes an NvtxRangeEvent (domain
// "xray", depth = stack depth). Frames above that one lost their exits (an
// unwinding exception, records the runtime dropped): they end at the same
// time and count as unmatched entries; frames still open at the end of the
// log are dropped and counted. Exits with no frame count as unmatched exits.
#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "tracesmith/import/xray.h"
#include "xray_log.h"

namespace tracesmith::importer {
namespace {

using namespace model;

struct Frame {
  int32_t func_id;
  uint64_t start_tsc;
  uint32_t below_same = kNone;  // the next open frame of the same function, down the stack
  static constexpr uint32_t kNone = UINT32_MAX;
};

class RangeBuilder {
 public:
  RangeBuilder(Trace* t, const XRayInstrMap* map, uint64_t cycle_frequency, ImportStats* st)
      : t_(t), map_(map), freq_(cycle_frequency), st_(st), domain_(t->strings.Intern("xray")) {}

  // O(1) per record (amortized): the topmost open frame of each function is
  // found through `top`, not by searching the stack, whatever the log's
  // entries and exits are (a log whose calls never pair made it quadratic).
  void RunThread(uint32_t pid, uint32_t tid, const std::vector<const xray::Block*>& blocks) {
    std::vector<Frame> stack;
    std::unordered_map<int32_t, uint32_t> top;  // function -> its topmost frame
    for (const xray::Block* b : blocks) {
      for (const xray::Call& c : b->calls) {
        if (c.kind == xray::kEnter || c.kind == xray::kEnterArgs) {
          auto [it, fresh] = top.try_emplace(c.func_id, Frame::kNone);
          stack.push_back(Frame{c.func_id, c.tsc, it->second});
          it->second = static_cast<uint32_t>(stack.size() - 1);
          continue;
        }
        auto it = top.find(c.func_id);
        if (it == top.end() || it->second == Frame::kNone) {
          ++st_->unmatched_exits;
          continue;
        }
        const size_t keep = it->second;
        st_->unmatched_entries += stack.size() - keep - 1;
        while (stack.size() > keep) {
          const Frame& f = stack.back();
          Emit(pid, tid, f, c.tsc, stack.size() - 1);
          top[f.func_id] = f.below_same;
          stack.pop_back();
        }
      }
    }
    st_->unmatched_entries += stack.size();
  }

  uint64_t unknown_ids() const { return unknown_ids_; }

 private:
  uint64_t Ns(uint64_t tsc) const {
    if (freq_ == 0) return tsc;  // unknown frequency: TSC taken as ns (warned)
    unsigned __int128 ns = static_cast<unsigned __int128>(tsc) * 1000000000u / freq_;
    return ns > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(ns);
  }

  uint32_t NameId(int32_t id) {
    auto [it, fresh] = names_.try_emplace(id, 0);
    if (fresh) {
      if (map_ && (id < 1 || static_cast<size_t>(id) > map_->names.size())) ++unknown_ids_;
      it->second = t_->strings.Intern(map_ ? map_->Name(id) : "function#" + std::to_string(id));
    }
    return it->second;
  }

  void Emit(uint32_t pid, uint32_t tid, const Frame& f, uint64_t end_tsc, size_t depth) {
    NvtxRangeEvent r{};
    r.start_ns = Ns(f.start_tsc);
    r.end_ns = std::max(r.start_ns, Ns(end_tsc));
    r.pid = pid;
    r.tid = tid;
    r.name_id = NameId(f.func_id);
    r.domain_id = domain_;
    r.depth = static_cast<uint8_t>(std::min<size_t>(depth, 255));
    t_->Rows<NvtxRangeEvent>().push_back(r);
    ++st_->events;
  }

  Trace* t_;
  const XRayInstrMap* map_;
  uint64_t freq_;
  ImportStats* st_;
  uint32_t domain_;
  std::unordered_map<int32_t, uint32_t> names_;
  uint64_t unknown_ids_ = 0;
};

void AddStat(Trace* t, const char* name, uint64_t value, uint8_t severity) {
  if (value == 0) return;
  t->Rows<Stat>().push_back(Stat{.value = static_cast<int64_t>(value),
                                 .name_id = t->strings.Intern(name),
                                 .severity = severity});
}

void AddMetadata(Trace* t, const char* key, const std::string& value) {
  t->Rows<MetadataEntry>().push_back(
      MetadataEntry{.key_id = t->strings.Intern(key), .value_id = t->strings.Intern(value)});
}

}  // namespace

StatusOr<Trace> ImportXRayLog(std::string_view data, const XRayInstrMap* map, ImportStats* stats) {
  ASSIGN_OR_RETURN(xray::Log log, xray::ParseLog(data));
  ImportStats local;
  ImportStats& st = stats ? *stats : local;
  Trace t;

  // A thread's blocks in time order; FDR may write a thread's buffers out of order.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<const xray::Block*>> threads;
  for (const xray::Block& b : log.blocks)
    if (!b.calls.empty()) threads[{b.pid, b.tid}].push_back(&b);
  RangeBuilder ranges(&t, map, log.cycle_frequency, &st);
  for (auto& [key, blocks] : threads) {
    std::stable_sort(blocks.begin(), blocks.end(), [](const xray::Block* a, const xray::Block* b) {
      return a->calls.front().tsc < b->calls.front().tsc;
    });
    ranges.RunThread(key.first, key.second, blocks);
  }
  auto& rows = t.Rows<NvtxRangeEvent>();
  std::sort(rows.begin(), rows.end(), [](const NvtxRangeEvent& a, const NvtxRangeEvent& b) {
    return std::tie(a.start_ns, a.pid, a.tid, a.depth) <
           std::tie(b.start_ns, b.pid, b.tid, b.depth);
  });

  const uint32_t process_name = t.strings.Intern(map ? map->binary : std::string());
  uint32_t last_pid = UINT32_MAX;
  for (const auto& [key, blocks] : threads) {
    if (key.first != last_pid)
      t.Rows<Process>().push_back(Process{.pid = key.first, .name_id = process_name});
    last_pid = key.first;
    t.Rows<model::Thread>().push_back(model::Thread{.tid = key.second, .pid = key.first});
  }

  st.skipped += log.skipped;
  st.damage = log.damage;
  if (map == nullptr)
    st.warnings.push_back(
        "no instrumentation map (--binary): XRay functions are named function#<id>");
  else if (ranges.unknown_ids() > 0)
    st.warnings.push_back(
        StrFormat("%llu function ids are not in the instrumentation map of %s "
                  "(a different build of the binary?)",
                  static_cast<unsigned long long>(ranges.unknown_ids()), map->binary.c_str()));
  if (log.cycle_frequency == 0)
    st.warnings.push_back("the XRay log has no cycle frequency: TSC values taken as nanoseconds");

  AddMetadata(
      &t, "import.format",
      StrFormat("LLVM XRay %s log, version %u", log.type == 0 ? "basic" : "FDR", log.version));
  AddMetadata(&t, "xray.cycle_frequency_hz", std::to_string(log.cycle_frequency));
  AddMetadata(&t, "xray.constant_tsc", log.constant_tsc ? "true" : "false");
  AddMetadata(&t, "xray.nonstop_tsc", log.nonstop_tsc ? "true" : "false");
  if (map != nullptr) AddMetadata(&t, "xray.binary", map->binary);
  if (!log.damage.empty()) AddMetadata(&t, "import.damage", log.damage);
  AddStat(&t, "xray_unmatched_entries", st.unmatched_entries, 1);
  AddStat(&t, "xray_unmatched_exits", st.unmatched_exits, 1);
  AddStat(&t, "xray_records_skipped", log.skipped, 0);
  AddStat(&t, "import_damaged", log.damage.empty() ? 0 : 1, 2);
  return t;
}

}  // namespace tracesmith::importer
