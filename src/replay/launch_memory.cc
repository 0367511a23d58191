#include "tracesmith/replay/launch_memory.h"

#include <algorithm>
#include <map>

#include "tracesmith/base/file_util.h"
#include "tracesmith/base/status.h"

namespace tracesmith::replay {

LaunchMemory DescribeLaunchMemory(const format::ReplayCapture& capture,
                                  const format::LaunchRecord& launch) {
  LaunchMemory m;
  m.scope = launch.coverage.scope;
  m.coverage = launch.coverage;
  std::vector<const format::SnapshotRecord*> before;
  for (const format::SnapshotRecord& s : capture.snapshots)
    if (s.launch_index == launch.index && s.phase == format::SnapshotPhase::kBefore)
      before.push_back(&s);
  std::sort(before.begin(), before.end(),
            [](const format::SnapshotRecord* a, const format::SnapshotRecord* b) {
              return a->address < b->address;
            });
  std::map<uint64_t, uint32_t> number;  // address -> #k
  for (const format::SnapshotRecord* s : before)
    number.emplace(s->address, uint32_t(number.size() + 1));
  std::map<uint64_t, LaunchMemory::Group> groups;  // by via address
  for (const format::SnapshotRecord* s : before) {
    ++m.ranges;
    m.bytes += s->size;
    switch (s->origin.source) {
      case format::RangeSource::kParameter:
        ++m.from_parameters;
        break;
      case format::RangeSource::kRequested:
        ++m.requested;
        break;
      case format::RangeSource::kLive:
        ++m.live;
        break;
      case format::RangeSource::kPointer: {
        ++m.reached;
        m.reached_bytes += s->size;
        auto [it, fresh] = groups.try_emplace(s->origin.via);
        LaunchMemory::Group& g = it->second;
        if (fresh) {
          auto n = number.find(s->origin.via);
          g.via = n == number.end() ? 0 : n->second;
          g.via_address = s->origin.via;
          g.first_offset = s->origin.first_offset;
        }
        ++g.allocations;
        g.bytes += s->size;
        g.first_offset = std::min(g.first_offset, s->origin.first_offset);
        g.last_offset = std::max(g.last_offset, s->origin.last_offset);
        g.depth = std::max(g.depth, s->origin.depth);
        break;
      }
    }
  }
  for (auto& [via, g] : groups) m.groups.push_back(g);
  std::sort(m.groups.begin(), m.groups.end(),
            [](const auto& a, const auto& b) { return a.via < b.via; });
  return m;
}

std::string FormatLaunchMemory(const LaunchMemory& m) {
  if (m.scope == format::MemoryScope::kUnknown && m.reached == 0 && m.requested == 0 && m.live == 0)
    return "";
  std::string parts = StrFormat("%u from the parameters", m.from_parameters);
  if (m.reached)
    parts += StrFormat(", %u reached through pointers in memory (%s)", m.reached,
                       HumanBytes(m.reached_bytes).c_str());
  if (m.requested) parts += StrFormat(", %u requested (--replay-ranges)", m.requested);
  if (m.live) parts += StrFormat(", %u other live allocation(s)", m.live);
  std::string s =
      StrFormat("  memory: %u range(s), %s, captured with --replay-memory %s: %s\n", m.ranges,
                HumanBytes(m.bytes).c_str(), format::MemoryScopeName(m.scope), parts.c_str());
  for (const LaunchMemory::Group& g : m.groups) {
    std::string where =
        g.first_offset == g.last_offset
            ? StrFormat("at offset 0x%llx", static_cast<unsigned long long>(g.first_offset))
            : StrFormat("at offsets 0x%llx..0x%llx",
                        static_cast<unsigned long long>(g.first_offset),
                        static_cast<unsigned long long>(g.last_offset));
    s += StrFormat(
        "    %u allocation%s (%s) reached through pointers in allocation #%u (0x%llx) %s%s\n",
        g.allocations, g.allocations == 1 ? "" : "s", HumanBytes(g.bytes).c_str(), g.via,
        static_cast<unsigned long long>(g.via_address), where.c_str(),
        g.depth > 1 ? StrFormat(", %u pointer hops from a parameter", g.depth).c_str() : "");
  }
  const format::MemoryCoverage& c = m.coverage;
  if (!c.complete()) {
    std::string left;
    if (c.ranges_over_budget)
      left += StrFormat("%u allocation(s) (%s) over the --replay-max-mb budget",
                        c.ranges_over_budget, HumanBytes(c.bytes_over_budget).c_str());
    if (c.ranges_past_depth)
      left += StrFormat("%s%u allocation(s) past --replay-reach-depth", left.empty() ? "" : ", ",
                        c.ranges_past_depth);
    if (c.words_unresolved)
      left += StrFormat("%s%llu address-like word(s) not looked up", left.empty() ? "" : ", ",
                        static_cast<unsigned long long>(c.words_unresolved));
    s += "    NOT recorded: " + left + "\n";
  }
  return s;
}

std::string MissingMemoryHint(const LaunchMemory& m) {
  switch (m.scope) {
    case format::MemoryScope::kParams:
      return "captured with --replay-memory params: allocations reached through pointers stored "
             "in memory were not recorded; capture again with the default (--replay-memory "
             "reachable)";
    case format::MemoryScope::kReachable:
      if (!m.coverage.complete())
        return "some memory reached through pointers was not recorded (NOT recorded in the "
               "memory lines); raise --replay-max-mb / --replay-reach-depth, or capture with "
               "--replay-memory all";
      return "every allocation reachable through pointers stored in the recorded memory was "
             "recorded; a kernel can still read memory no stored pointer leads to (addresses "
             "computed from integers, host memory): try --replay-memory all";
    case format::MemoryScope::kAll:
    case format::MemoryScope::kUnknown:
      break;
  }
  return "";
}

}  // namespace tracesmith::replay

namespace tracesmith::replay {

std::string OutOfDeviceMemoryText(int64_t launch, int64_t range_first, int64_t range_last,
                                  size_t launches, size_t ranges, uint64_t needed_bytes,
                                  uint64_t free_bytes, uint64_t total_bytes) {
  std::string what;
  if (launch >= 0)
    what = StrFormat("launch %lld", static_cast<long long>(launch));
  else if (range_first >= 0)
    what = StrFormat("launches %lld..%lld", static_cast<long long>(range_first),
                     static_cast<long long>(range_last));
  else
    what = StrFormat("all %zu recorded launch%s", launches, launches == 1 ? "" : "es");
  const std::string free_text =
      total_bytes ? StrFormat("the GPU has %s free of %s", HumanBytes(free_bytes).c_str(),
                              HumanBytes(total_bytes).c_str())
                  : std::string("the GPU's free memory is unknown (cuMemGetInfo failed)");
  std::string text = StrFormat(
      "not enough device memory to replay %s: %s needs %s in %zu range(s) at once (the memory "
      "it reads and writes, at the captured addresses), and %s",
      what.c_str(), launch >= 0 || range_first >= 0 ? "it" : "replaying them together",
      HumanBytes(needed_bytes).c_str(), ranges, free_text.c_str());
  if (launch < 0 && range_first < 0 && launches > 1)
    text += "; replay one launch at a time with --launch N";
  else if (total_bytes && free_bytes < total_bytes / 2)
    text += "; other processes hold the rest (nvidia-smi lists them)";
  return text;
}

}  // namespace tracesmith::replay
