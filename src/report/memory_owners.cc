#include "tracesmith/report/memory_owners.h"

#include <algorithm>
#include <map>

namespace tracesmith::report {

StatusOr<std::vector<KeyOwnerSeries>> ComputeOwnerSeries(const std::string& path,
                                                         const model::Trace& meta,
                                                         uint64_t start_ns, uint64_t duration_ns,
                                                         size_t bins, size_t max_owners) {
  bins = std::max<size_t>(1, bins);
  const unsigned __int128 span = (unsigned __int128)duration_ns + 1;
  auto bin_of = [&](uint64_t ts) {
    const uint64_t rel = ts > start_ns ? ts - start_ns : 0;
    return std::min(bins - 1, size_t((unsigned __int128)rel * bins / span));
  };
  struct State {
    uint64_t live = 0, peak = 0;
    size_t next_bin = 0;  // bins before this are final
    std::vector<uint64_t> bins;
  };
  std::map<analysis::MemoryKey, std::map<uint32_t, State>> keys;
  analysis::MemoryOwners owners(meta);
  analysis::LiveMemory live;
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(path));
  Status st = analysis::StreamMemoryEvents(
      *reader,
      [&](const model::Trace&, const model::MemoryEvent& e) {
        const analysis::MemoryChange c = live.Apply(e);
        if (c.kind != analysis::MemoryChange::kAlloc && c.kind != analysis::MemoryChange::kFree)
          return OkStatus();
        // An allocation that replaced one whose free was lost ended it first.
        auto apply = [&](const analysis::Allocation& a, bool add) {
          State& s = keys[c.key][owners.Of(a)];
          if (s.bins.empty()) s.bins.assign(bins, 0);
          const size_t b = bin_of(c.ts_ns);
          // The bytes carried into this bin count for it too.
          for (; s.next_bin <= b; ++s.next_bin)
            s.bins[s.next_bin] = std::max(s.bins[s.next_bin], s.live);
          s.next_bin = b;
          s.live = add ? s.live + a.bytes : s.live - std::min(s.live, a.bytes);
          s.peak = std::max(s.peak, s.live);
          s.bins[b] = std::max(s.bins[b], s.live);
        };
        if (c.kind == analysis::MemoryChange::kAlloc && c.replaced.bytes) apply(c.replaced, false);
        apply(c.alloc, c.kind == analysis::MemoryChange::kAlloc);
        return OkStatus();
      },
      [](const model::Trace&) { return OkStatus(); });
  if (!st.ok()) return Status(st.code(), path + ": " + st.message());
  std::vector<KeyOwnerSeries> out;
  for (auto& [key, by_owner] : keys) {
    KeyOwnerSeries k;
    k.key = key;
    for (auto& [owner, s] : by_owner) {
      for (; s.next_bin < bins; ++s.next_bin)
        s.bins[s.next_bin] = std::max(s.bins[s.next_bin], s.live);
      k.owners.push_back({owners.Name(owner), s.peak, std::move(s.bins)});
    }
    std::stable_sort(
        k.owners.begin(), k.owners.end(),
        [](const OwnerSeries& a, const OwnerSeries& b) { return a.peak_bytes > b.peak_bytes; });
    if (max_owners && k.owners.size() > max_owners) k.owners.resize(max_owners);
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace tracesmith::report
