#include "tracesmith/memory/memory_report.h"

#include <algorithm>
#include <bit>
#include <map>
#include <unordered_map>

#include "memory_steps.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/timeline/call_site.h"

namespace tracesmith::analysis {
namespace {

struct StackStats {
  uint64_t allocs = 0, frees = 0, bytes = 0, lifetime_ns = 0;
};

struct KeyPass1 {
  uint64_t peak = 0, peak_index = 0;
};

struct OwnerState {
  uint64_t live = 0, peak = 0, peak_ns = 0, first_ns = 0;
  uint64_t peak_ts = 0;        // absolute
  uint32_t peak_stack = 0;     // of the allocation that made the peak
  std::vector<uint64_t> bins;  // max live bytes per bin
  size_t next_bin = 0;         // bins before this are final
};

struct KeyPass2 {
  std::vector<uint64_t> bins;  // max live bytes per bin, what is carried in included
  size_t next_bin = 0;         // bins before this are final
  uint64_t live = 0;
  uint64_t graph_live = 0, graph_at_peak = 0;  // allocated during graph captures
  uint64_t peak_ts = 0;                        // absolute
  uint32_t peak_stack = 0;                     // of the allocation that made the peak
  std::map<uint32_t, OwnerState> owners;
};

// Brings a series of max-per-bin live bytes up to `bin` (not before
// *next_bin): the level held since its last change counts for every bin from
// *next_bin through `bin`, so a bin counts the bytes carried into it also when
// its first event is a free. Bins before *next_bin are final. The key's series
// and its owners' go through here with the same bins, so they agree bin by bin.
void CarryInto(std::vector<uint64_t>* bins, size_t* next_bin, uint64_t live, size_t bin) {
  for (; *next_bin <= bin; ++*next_bin) (*bins)[*next_bin] = std::max((*bins)[*next_bin], live);
  *next_bin = bin;
}

// Names owners and call sites of stacks, once per stack.
class Namer {
 public:
  explicit Namer(const model::Trace& meta) : owners_(meta), sites_(meta) {}
  uint32_t Owner(const Allocation& a) { return owners_.Of(a); }
  const std::string& OwnerName(uint32_t owner) const { return owners_.Name(owner); }
  const std::string& Library(uint32_t owner) const { return owners_.Library(owner); }
  const std::string& Site(uint32_t stack) {
    auto [it, fresh] = site_.try_emplace(stack);
    if (fresh) it->second = sites_.Name(stack);
    return it->second;
  }

 private:
  MemoryOwners owners_;
  CallSiteNamer sites_;
  std::unordered_map<uint32_t, std::string> site_;
};

template <typename Row, typename Key>
void SortDesc(std::vector<Row>* rows, Key key) {
  std::stable_sort(rows->begin(), rows->end(),
                   [&](const Row& a, const Row& b) { return key(a) > key(b); });
}

MemorySnapshot Snapshot(const LiveMemory& live, const MemoryKey& key, uint64_t t0, uint64_t ts,
                        Namer& names, size_t top) {
  MemorySnapshot s;
  s.ts_ns = ts > t0 ? ts - t0 : 0;
  std::map<uint32_t, OwnerBytes> owners;
  std::map<std::pair<std::string, uint32_t>, SiteBytes> sites;
  std::vector<std::pair<Allocation, uint32_t>> allocs;
  live.ForEachLive([&](const MemoryKey& k, const Allocation& a) {
    if (k != key) return;
    s.live_bytes += a.bytes;
    ++s.live_count;
    const uint32_t owner = names.Owner(a);
    OwnerBytes& o = owners[owner];
    o.bytes += a.bytes;
    ++o.count;
    SiteBytes& site = sites[{names.Site(a.stack_id), owner}];
    site.bytes += a.bytes;
    ++site.count;
    site.owner = names.OwnerName(owner);
    allocs.emplace_back(a, owner);
  });
  for (auto& [owner, o] : owners) {
    o.owner = names.OwnerName(owner);
    o.library = names.Library(owner);
    s.by_owner.push_back(o);
  }
  SortDesc(&s.by_owner, [](const OwnerBytes& o) { return o.bytes; });
  for (auto& [name, site] : sites) {
    site.site = name.first;
    s.by_site.push_back(site);
  }
  SortDesc(&s.by_site, [](const SiteBytes& x) { return x.bytes; });
  if (s.by_site.size() > top) s.by_site.resize(top);
  const size_t n = std::min(top, allocs.size());
  std::partial_sort(allocs.begin(), allocs.begin() + n, allocs.end(), [](auto& a, auto& b) {
    return a.first.bytes != b.first.bytes ? a.first.bytes > b.first.bytes
                                          : a.first.alloc_ns < b.first.alloc_ns;
  });
  for (size_t i = 0; i < n; ++i) {
    const auto& [a, owner] = allocs[i];
    s.top.push_back({a.address, a.bytes, a.alloc_ns > t0 ? a.alloc_ns - t0 : 0,
                     names.OwnerName(owner), names.Site(a.stack_id), a.memory_kind});
  }
  return s;
}

// Growth and steady state of a live-bytes summary, in words. A bin holds its
// slice's maximum, so a drop inside the last slice (a free at teardown) is
// said with `end` (the bytes live at the end).
std::string Summarize(const std::vector<uint64_t>& bins, uint64_t duration, uint64_t peak,
                      uint64_t end) {
  if (bins.empty() || peak == 0) return "no memory allocated";
  const size_t n = bins.size();
  auto time_of = [&](size_t bin) { return HumanDuration(duration * bin / n); };
  size_t reach = 0;
  while (reach < n && bins[reach] * 10 < peak * 9) ++reach;
  // Steady: the longest tail whose values stay within 5% of the peak of each other.
  size_t steady = n;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = n; i-- > 0;) {
    const uint64_t l = std::min(lo, bins[i]), h = std::max(hi, bins[i]);
    if ((h - l) * 20 > peak) break;
    lo = l, hi = h, steady = i;
  }
  std::string s = "reaches 90% of its peak at " + time_of(reach);
  if (steady + 1 < n && steady > 0)
    s += "; steady from " + time_of(steady) + " on (" +
         (lo == hi ? "flat at " + HumanBytes(lo) : HumanBytes(lo) + " to " + HumanBytes(hi)) +
         (lo > end && (lo - end) * 20 > peak ? ", " + HumanBytes(end) + " at the end" : "") + ")";
  else if (steady == 0)
    s += "; flat through the run" +
         (lo > end && (lo - end) * 20 > peak ? " (" + HumanBytes(end) + " at the end)" : "");
  else
    s += "; no steady state (still changing at the end)";
  return s;
}

std::string KeyName(const MemoryKeyReport& k) {
  std::string s = k.key.space == MemorySpace::kDevice
                      ? "GPU " + std::to_string(k.key.device_id)
                      : std::string(MemorySpaceName(k.key.space)) + " memory";
  return s + " (" + k.process + ")";
}

bool StaticMemory(uint8_t memory_kind) {
  return memory_kind == model::kMemDeviceStatic || memory_kind == model::kMemManagedStatic;
}

std::string_view MetadataValue(const model::Trace& meta, std::string_view key) {
  for (const model::MetadataEntry& m : meta.Rows<model::MetadataEntry>())
    if (meta.strings.Get(m.key_id) == key) return meta.strings.Get(m.value_id);
  return {};
}

bool HasStat(const model::Trace& meta, std::string_view name) {
  for (const model::Stat& s : meta.Rows<model::Stat>())
    if (meta.strings.Get(s.name_id) == name) return true;
  return false;
}

// What the report says when allocations have no call stack: without one
// neither the owner nor the call site can be named. Why, when the trace's
// capture metadata tells: the capture's stack mode ("capture.stacks"), and
// whether the capture recorded allocation calls itself (the statistic
// "capture.memory_ring_overflows" came with stacks on allocation calls,
// 2026-11-24; captures from before record allocations from CUPTI's activity
// records only, without stacks, and the oldest have no "capture.stacks").
std::string StacksNote(const model::Trace& meta, const AllocationStacks& s) {
  if (s.allocations == 0 || s.with_stack == s.allocations) return "";
  constexpr std::string_view kOld =
      "by a TraceSmith from before allocation calls carried stacks (2026-11-24)";
  if (s.none()) {
    const std::string_view mode = MetadataValue(meta, "capture.stacks");
    const std::string_view tool = MetadataValue(meta, "capture.tool");
    std::string why;
    if (tool == "tracesmith-inject" && mode == "none")
      why = "it was captured with --stacks none";
    else if (tool == "tracesmith-inject" &&
             (mode.empty() ||  // from before stacks were captured at all
              (!HasStat(meta, "capture.memory_ring_overflows") &&
               HasStat(meta, "capture.stacks_distinct"))))
      why = "it was captured " + std::string(kOld) + "; a new capture names them";
    else
      why = "it was captured with --stacks none or " + std::string(kOld) +
            ", or comes from a format without them";
    return "This trace has no call stacks on its allocations: " + why +
           ". Owners and call sites cannot be named; " +
           (s.allocations == 1 ? "its allocation (" + HumanBytes(s.without_stack_bytes) + ") shows"
                               : "its " + std::to_string(s.allocations) + " allocations (" +
                                     HumanBytes(s.without_stack_bytes) + ") show") +
           " as '(no stack)'.";
  }
  const uint64_t without = s.allocations - s.with_stack;
  return std::to_string(without) + " of " + std::to_string(s.allocations) + " allocations (" +
         HumanBytes(s.without_stack_bytes) + ") " + (without == 1 ? "has" : "have") +
         " no call stack, the others have one: owner and call site show as '(no stack)' for " +
         (without == 1 ? "it." : "them.");
}

void AddFindings(MemoryReport* r) {
  if (!r->stacks.note.empty()) r->findings.push_back(r->stacks.note);
  for (const MemoryKeyReport& k : r->keys) {
    if (k.peak_bytes == 0) continue;
    std::string line = "Peak " + HumanBytes(k.peak_bytes) + " on " + KeyName(k) + " at " +
                       HumanDuration(k.at_peak.ts_ns);
    if (!k.peak_place.text.empty()) line += ", " + k.peak_place.text;
    if (!k.peak_nvtx_range.empty()) line += ", inside NVTX range '" + k.peak_nvtx_range + "'";
    for (size_t i = 0; i < k.at_peak.by_owner.size() && i < 3; ++i)
      line += (i ? ", " : ": ") + k.at_peak.by_owner[i].owner + " " +
              HumanBytes(k.at_peak.by_owner[i].bytes);
    r->findings.push_back(line + ".");
    // Where the owners that count peaked, when elsewhere than the peak: "the
    // caching allocator peaked at 31.2 GiB in step 3's backward".
    for (size_t i = 0, said = 0; i < k.owners.size() && said < 3; ++i) {
      const OwnerPeak& o = k.owners[i];
      // Said by the peak's finding when the owner held its peak then too.
      const bool at_its_peak = std::any_of(
          k.at_peak.by_owner.begin(), k.at_peak.by_owner.end(),
          [&](const OwnerBytes& b) { return b.owner == o.owner && b.bytes == o.peak_bytes; });
      if (o.peak_place.text.empty() || o.peak_bytes * 10 < k.peak_bytes || at_its_peak) continue;
      r->findings.push_back(o.owner + " peaked at " + HumanBytes(o.peak_bytes) + " on " +
                            KeyName(k) + " at " + HumanDuration(o.peak_ns) + ", " +
                            o.peak_place.text + ".");
      ++said;
    }
    // Memory held from early on to the end: every block of it still live at the
    // end was allocated in the first quarter of the run.
    for (const OwnerPeak& o : k.owners) {
      if (o.end_bytes * 10 >= k.peak_bytes && o.held_since_ns * 4 <= r->duration_ns)
        r->findings.push_back(o.owner + " holds " + HumanBytes(o.end_bytes) + " on " + KeyName(k) +
                              ", allocated by " + HumanDuration(o.held_since_ns) +
                              " and held to the end (its peak " + HumanBytes(o.peak_bytes) +
                              " at " + HumanDuration(o.peak_ns) + ").");
    }
    for (const SiteBytes& s : k.live_at_end)
      if (s.suspect)
        r->findings.push_back(
            "Still growing at the end (a leak, or a run too short to reach "
            "a steady state): " +
            s.site + " (" + s.owner + ") allocated " + std::to_string(s.count) + " blocks (" +
            HumanBytes(s.bytes) + ") between " + HumanDuration(s.first_ns) + " and " +
            HumanDuration(s.last_ns) + " that are still live at the end.");
    if (k.graph_pool_end_bytes || k.graph_pool_peak_bytes)
      r->findings.push_back("CUDA graph pools (memory allocated while graphs were captured) hold " +
                            HumanBytes(k.graph_pool_end_bytes) + " in " +
                            std::to_string(k.graph_pool_end_count) + " blocks on " + KeyName(k) +
                            " at the end (" + HumanBytes(k.graph_pool_peak_bytes) +
                            " at the peak).");
    if (k.totals.unmatched_frees)
      r->findings.push_back(std::to_string(k.totals.unmatched_frees) + " frees on " + KeyName(k) +
                            " of memory allocated before the capture started (not counted).");
    if (k.torch_allocated_peak || k.torch_reserved_peak) {
      std::string line =
          "torch.profiler's own totals for the caching allocator on " + KeyName(k) + ": at most ";
      if (k.torch_allocated_peak) line += HumanBytes(*k.torch_allocated_peak) + " allocated";
      if (k.torch_allocated_peak && k.torch_reserved_peak) line += " and ";
      if (k.torch_reserved_peak)
        line += HumanBytes(*k.torch_reserved_peak) +
                " reserved (taken from CUDA, the blocks it caches included)";
      if (k.torch_allocated_peak && *k.torch_allocated_peak > k.peak_bytes)
        line += "; its allocated peak is " + HumanBytes(*k.torch_allocated_peak - k.peak_bytes) +
                " above the peak here: memory allocated before the trace began, whose "
                "allocations are not in it";
      r->findings.push_back(line + ".");
    }
    if (k.used_at_start && *k.used_at_start)
      r->findings.push_back(HumanBytes(*k.used_at_start) + " of " + KeyName(k) +
                            " was already in use at the capture's first reading (cuMemGetInfo "
                            "at context creation or capture start: every process, CUDA "
                            "contexts included), beside the allocations above.");
  }
  for (const ChurnRow& c : r->churn)
    if (c.frees >= 100 && c.per_second >= 100)
      r->findings.push_back("Churn: " + c.site + " (" + c.owner + ") allocated and freed " +
                            std::to_string(c.frees) + " times (" + StrFormat("%.0f", c.per_second) +
                            "/s): a caching allocator or a reused buffer would avoid it.");
}

// The time ranges in which each process was capturing a CUDA graph, from the
// Begin/EndCapture API rows (runtime or driver), by thread.
class GraphCaptures {
 public:
  Status Read(format::TraceSource& reader) {
    std::unordered_map<uint32_t, int8_t> kind;               // name id -> 0 other, 1 begin, 2 end
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> open;  // (pid, tid) -> begin
    Status st = reader.Stream(
        [&](const model::Trace& batch, model::TableKind) {
          for (const model::ApiEvent& a : batch.Rows<model::ApiEvent>()) {
            auto [it, fresh] = kind.try_emplace(a.name_id, 0);
            if (fresh) {
              const std::string_view n = batch.strings.Get(a.name_id);
              if (n.find("StreamBeginCapture") != std::string_view::npos) it->second = 1;
              if (n.find("StreamEndCapture") != std::string_view::npos) it->second = 2;
            }
            if (it->second == 1) open[{a.pid, a.tid}] = a.start_ns;
            if (it->second == 2) {
              auto o = open.find({a.pid, a.tid});
              if (o == open.end()) continue;
              ranges_[a.pid].push_back({o->second, std::max(o->second, a.end_ns)});
              open.erase(o);
              ++count_;
            }
          }
          return OkStatus();
        },
        {}, [](model::TableKind kind) { return kind == model::TableKind::kApi; });
    for (auto& [pid, r] : ranges_) std::sort(r.begin(), r.end());
    return st;
  }
  bool Contains(uint32_t pid, uint64_t ts) const {
    auto it = ranges_.find(pid);
    if (it == ranges_.end()) return false;
    for (const auto& [b, e] : it->second)  // few: one per graph captured
      if (ts >= b && ts <= e) return true;
    return false;
  }
  uint64_t count() const { return count_; }

 private:
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> ranges_;
  uint64_t count_ = 0;
};

}  // namespace

Status BuildMemoryReport(const std::string& path, const MemoryReportOptions& o, MemoryReport* r,
                         format::ReadReport* damage) {
  *r = MemoryReport{};
  r->source = path;
  // A malformed --at is refused before the file is opened.
  if (!o.at.empty())
    if (auto d = ParseDuration(o.at); !d.ok())
      return InvalidArgument("--at " + o.at + ": " + d.status().message());
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(path));
  return BuildMemoryReport(*source, o, r, damage);
}

Status BuildMemoryReport(format::TraceSource& source, const MemoryReportOptions& o, MemoryReport* r,
                         format::ReadReport* damage) {
  *r = MemoryReport{};
  const std::string path = source.name();
  r->source = path;
  // A malformed --at is refused before the file is read.
  std::optional<uint64_t> at_rel;
  if (!o.at.empty()) {
    auto d = ParseDuration(o.at);
    if (!d.ok()) return InvalidArgument("--at " + o.at + ": " + d.status().message());
    at_rel = *d;
  }
  format::TraceSource* reader = &source;
  auto fail = [&](Status st) {
    return st.ok() || path.empty() ? st : Status(st.code(), path + ": " + st.message());
  };

  // The trace's time range, from the chunk index (event tables only).
  uint64_t t0 = UINT64_MAX, t1 = 0;
  bool range_known = true;  // every event chunk has its time range in the index
  for (const format::ChunkIndexEntry& c : reader->TableChunks()) {
    if (c.table_kind < 1 || c.table_kind >= 64) continue;
    if (c.min_ts) {
      t0 = std::min(t0, c.min_ts);
      t1 = std::max(t1, c.max_ts);
    } else if (c.rows) {
      range_known = false;
    }
  }
  range_known = range_known && t0 != UINT64_MAX;

  // --at past the trace's end: refused before any pass when the index gives
  // the range, else after the first.
  auto beyond = [&](uint64_t duration) {
    return InvalidArgument("--at " + o.at + " is past the end of the trace: it spans 0 to " +
                           HumanDuration(duration) + " (times are relative to its start)");
  };
  if (at_rel && range_known && *at_rel > t1 - t0) return beyond(t1 - t0);

  GraphCaptures captures;
  RETURN_IF_ERROR(fail(captures.Read(*reader)));
  r->graph_captures = captures.count();

  // Pass 1: peaks, per-stack churn, what is live at the end.
  LiveMemory live;
  std::map<MemoryKey, KeyPass1> keys;
  std::unordered_map<uint32_t, StackStats> stacks;
  model::Trace meta;
  uint64_t index = 0, mem_lo = UINT64_MAX, mem_hi = 0;
  RETURN_IF_ERROR(fail(StreamMemoryEvents(
      *reader,
      [&](const model::Trace&, const model::MemoryEvent& e) {
        const MemoryChange c = live.Apply(e);
        ++index;
        mem_lo = std::min(mem_lo, e.ts_ns);
        mem_hi = std::max(mem_hi, e.ts_ns);
        if (c.kind == MemoryChange::kAlloc) {
          StackStats& s = stacks[c.alloc.stack_id];
          ++s.allocs;
          s.bytes += c.alloc.bytes;
          if (!StaticMemory(c.alloc.memory_kind)) {
            ++r->stacks.allocations;
            if (c.alloc.stack_id)
              ++r->stacks.with_stack;
            else
              r->stacks.without_stack_bytes += c.alloc.bytes;
          }
        } else if (c.kind == MemoryChange::kFree) {
          StackStats& s = stacks[c.alloc.stack_id];
          ++s.frees;
          s.lifetime_ns += c.ts_ns - std::min(c.ts_ns, c.alloc.alloc_ns);
        }
        KeyPass1& k = keys[c.key];
        if (c.live_bytes > k.peak) k.peak = c.live_bytes, k.peak_index = index;
        return OkStatus();
      },
      [&](const model::Trace& m) {
        meta = m;
        return OkStatus();
      },
      &r->out_of_order)));
  r->events = index;
  r->stacks.note = StacksNote(meta, r->stacks);
  if (t0 == UINT64_MAX) t0 = mem_lo == UINT64_MAX ? 0 : mem_lo, t1 = std::max(mem_hi, t0);
  t0 = std::min(t0, mem_lo);
  t1 = std::max(t1, mem_hi == 0 ? t0 : mem_hi);
  r->start_ns = t0;
  r->duration_ns = t1 - t0;
  auto rel = [&](uint64_t ts) { return ts > t0 ? ts - t0 : 0; };
  if (at_rel && *at_rel > r->duration_ns) return beyond(r->duration_ns);
  std::optional<uint64_t> at;
  if (at_rel) at = t0 + *at_rel;

  // Pass 2: the peaks' contents, the summaries, the owners over time, --at.
  Namer names(meta);
  const size_t nbins = std::max<size_t>(1, o.bins);
  const uint64_t span = r->duration_ns + 1;
  LiveMemory live2;
  std::map<MemoryKey, KeyPass2> keys2;
  std::map<MemoryKey, MemorySnapshot> peaks, at_snap;
  auto take_at = [&]() {
    for (const auto& [key, k] : keys) at_snap[key] = Snapshot(live2, key, t0, *at, names, o.top);
  };
  index = 0;
  bool at_taken = false;
  RETURN_IF_ERROR(fail(StreamMemoryEvents(
      *reader,
      [&](const model::Trace&, const model::MemoryEvent& e) {
        if (at && !at_taken && e.ts_ns > *at) take_at(), at_taken = true;
        const MemoryChange c = live2.Apply(e);
        ++index;
        KeyPass2& k = keys2[c.key];
        if (k.bins.empty()) k.bins.assign(nbins, 0);
        // A late event (stored out of time order past the reader's reordering,
        // counted in out_of_order) counts in the bin the series has reached.
        const size_t bin = std::max(
            k.next_bin, std::min(nbins - 1, size_t(__uint128_t(rel(c.ts_ns)) * nbins / span)));
        CarryInto(&k.bins, &k.next_bin, k.live, bin);
        k.live = c.live_bytes;
        k.bins[bin] = std::max(k.bins[bin], k.live);
        auto owner_add = [&](const Allocation& a, bool add) {
          OwnerState& os = k.owners[names.Owner(a)];
          if (os.bins.empty()) os.bins.assign(nbins, 0);
          CarryInto(&os.bins, &os.next_bin, os.live, bin);  // never past the key's
          if (add) {
            if (os.live == 0 && os.peak == 0) os.first_ns = rel(a.alloc_ns);
            os.live += a.bytes;
            if (os.live > os.peak)
              os.peak = os.live, os.peak_ns = rel(c.ts_ns), os.peak_ts = c.ts_ns,
              os.peak_stack = a.stack_id;
          } else {
            os.live -= std::min(os.live, a.bytes);
          }
          os.bins[bin] = std::max(os.bins[bin], os.live);
        };
        auto graph_pool = [&](const Allocation& a, bool add) {
          if (!captures.Contains(c.key.pid, a.alloc_ns)) return;
          if (add)
            k.graph_live += a.bytes;
          else
            k.graph_live -= std::min(k.graph_live, a.bytes);
        };
        if (c.replaced.bytes) graph_pool(c.replaced, false);
        if (c.kind == MemoryChange::kAlloc) graph_pool(c.alloc, true);
        if (c.kind == MemoryChange::kFree) graph_pool(c.alloc, false);
        if (c.replaced.bytes) owner_add(c.replaced, false);
        if (c.kind == MemoryChange::kAlloc) owner_add(c.alloc, true);
        if (c.kind == MemoryChange::kFree) owner_add(c.alloc, false);
        auto p = keys.find(c.key);
        if (p != keys.end() && p->second.peak_index == index) {
          peaks[c.key] = Snapshot(live2, c.key, t0, c.ts_ns, names, o.top);
          k.graph_at_peak = k.graph_live;
          k.peak_ts = c.ts_ns;
          k.peak_stack = c.kind == MemoryChange::kAlloc ? c.alloc.stack_id : 0;
        }
        return OkStatus();
      },
      {})));
  if (at && !at_taken) take_at();

  // Where each peak fell (the key's and its owners'): in which step of its
  // process (the steps analyze finds, on the host's clock), and in which phase
  // of a training step when the allocation's stack says so, else the NVTX
  // ranges open then (the outermost that names one); and the innermost
  // (shortest) NVTX range of the process open at the key's peak.
  struct Instant {
    uint32_t pid = 0, stack = 0;
    uint64_t ts = 0;
    uint64_t inner_len = UINT64_MAX, phase_len = 0;
    std::string inner, phase_range, phase;
  };
  std::vector<Instant> instants;
  std::map<MemoryKey, size_t> key_instant;
  std::map<std::pair<MemoryKey, uint32_t>, size_t> owner_instant;  // (key, owner)
  for (const auto& [key, k2] : keys2) {
    if (!peaks.count(key)) continue;
    key_instant[key] = instants.size();
    instants.push_back({.pid = key.pid, .stack = k2.peak_stack, .ts = k2.peak_ts});
    for (const auto& [owner, os] : k2.owners)
      if (os.peak) {
        owner_instant[{key, owner}] = instants.size();
        instants.push_back({.pid = key.pid, .stack = os.peak_stack, .ts = os.peak_ts});
      }
  }
  std::map<uint32_t, ProcessSteps> steps;  // by pid
  if (o.steps)
    for (const Instant& in : instants)
      if (!steps.count(in.pid)) RETURN_IF_ERROR(fail(steps[in.pid].Read(*reader, in.pid)));
  if (!instants.empty()) {
    std::unordered_map<uint32_t, std::string> range_phase;  // name id -> phase
    // The instants by (pid, time): each range visits only those inside it
    // (an imported torch trace has a range per op).
    std::vector<uint32_t> by_time(instants.size());
    for (uint32_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
    auto pid_ts = [&](uint32_t i) { return std::pair(instants[i].pid, instants[i].ts); };
    std::sort(by_time.begin(), by_time.end(),
              [&](uint32_t a, uint32_t b) { return pid_ts(a) < pid_ts(b); });
    using PidTs = std::pair<uint32_t, uint64_t>;
    auto before = [&](uint32_t i, const PidTs& v) { return pid_ts(i) < v; };
    RETURN_IF_ERROR(fail(reader->Stream(
        [&](const model::Trace& batch, model::TableKind) {
          for (const model::NvtxRangeEvent& n : batch.Rows<model::NvtxRangeEvent>())
            for (auto it = std::lower_bound(by_time.begin(), by_time.end(),
                                            PidTs(n.pid, n.start_ns), before);
                 it != by_time.end() && pid_ts(*it) <= PidTs(n.pid, n.end_ns); ++it) {
              Instant& in = instants[*it];
              const uint64_t len = n.end_ns - n.start_ns;
              if (len < in.inner_len) in.inner_len = len, in.inner = batch.strings.Get(n.name_id);
              auto [ph, fresh] = range_phase.try_emplace(n.name_id);
              if (fresh) ph->second = PhaseOfRangeName(batch.strings.Get(n.name_id));
              if (!ph->second.empty() && len >= in.phase_len)
                in.phase_len = len, in.phase = ph->second,
                in.phase_range = batch.strings.Get(n.name_id);
            }
          return OkStatus();
        },
        {}, [](model::TableKind kind) { return kind == model::TableKind::kNvtxRange; })));
  }
  auto place_of = [&](const Instant& in) {
    StepPlace p = steps[in.pid].Place(in.ts);
    std::tie(p.phase, p.evidence) = PhaseOfStack(meta, in.stack);
    if (p.phase.empty() && !in.phase.empty())
      p.phase = in.phase, p.evidence = "inside NVTX range '" + in.phase_range + "'";
    p.text = StepPlaceText(p);
    return p;
  };

  // Device memory in use at the capture's start (the capture's counter), and
  // torch.profiler's totals of its caching allocator (imported traces).
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint64_t, uint64_t>> used;  // -> (ts, bytes)
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> torch_totals[2];  // allocated, reserved: max
  RETURN_IF_ERROR(fail(reader->Stream(
      [&](const model::Trace& batch, model::TableKind) {
        for (const model::CounterEvent& c : batch.Rows<model::CounterEvent>()) {
          const std::string_view name = batch.strings.Get(c.name_id);
          for (int which : {0, 1})
            if (name == (which ? model::kTorchReservedCounter : model::kTorchAllocatedCounter)) {
              uint64_t& max = torch_totals[which][{c.pid, c.device_id}];
              max = std::max(max, c.value > 0 && c.value < 0x1p64 ? uint64_t(c.value) : 0);
            }
          if (name != model::kDeviceMemoryUsedCounter) continue;
          auto [it, fresh] = used.try_emplace({c.pid, c.device_id}, c.ts_ns, uint64_t(c.value));
          if (!fresh && c.ts_ns < it->second.first) it->second = {c.ts_ns, uint64_t(c.value)};
        }
        return OkStatus();
      },
      {}, [](model::TableKind kind) { return kind == model::TableKind::kCounter; })));
  if (damage) *damage = reader->report();

  // Per-key results.
  std::map<uint32_t, std::string> process_names;
  for (const model::Process& p : meta.Rows<model::Process>())
    process_names[p.pid] = std::string(meta.strings.Get(p.name_id));
  std::map<std::pair<uint32_t, uint32_t>, std::string> device_names;
  for (const model::Device& d : meta.Rows<model::Device>())
    device_names[{d.pid, d.device_id}] = std::string(meta.strings.Get(d.name_id));
  // Still live at the end, by call site and owner; a site piles up (a leak, or
  // a run too short to reach a steady state) when a third or more of its blocks,
  // and at least two, came in the second half of its device's active time, in
  // three or more distinct 64ths of the run. Static memory never does.
  struct EndSite {
    SiteBytes row;
    uint64_t late = 0, bins = 0;  // blocks in the second half; a bit per 64th of the run
  };
  std::map<MemoryKey, uint64_t> key_first;
  live.ForEachLive([&](const MemoryKey& key, const Allocation& a) {
    auto [it, fresh] = key_first.try_emplace(key, a.alloc_ns);
    if (!fresh) it->second = std::min(it->second, a.alloc_ns);
  });
  std::map<MemoryKey, std::map<std::pair<std::string, uint32_t>, EndSite>> end_sites;
  std::map<std::pair<MemoryKey, uint32_t>, uint64_t> held_since;  // (key, owner)
  std::map<MemoryKey, uint64_t> graph_end_count;
  live.ForEachLive([&](const MemoryKey& key, const Allocation& a) {
    const uint32_t owner = names.Owner(a);
    const bool graph_pool = captures.Contains(key.pid, a.alloc_ns);
    if (graph_pool) ++graph_end_count[key];
    uint64_t& since = held_since[{key, owner}];
    since = std::max(since, rel(a.alloc_ns));
    EndSite& e = end_sites[key][{names.Site(a.stack_id), owner}];
    SiteBytes& s = e.row;
    if (s.count == 0 || rel(a.alloc_ns) < s.first_ns) s.first_ns = rel(a.alloc_ns);
    s.last_ns = std::max(s.last_ns, rel(a.alloc_ns));
    s.bytes += a.bytes;
    ++s.count;
    s.owner = names.OwnerName(owner);
    const uint64_t first = rel(key_first[key]);
    // A graph's pool is held by the graph by design: not a pile-up.
    if (!graph_pool &&
        rel(a.alloc_ns) >= first + (r->duration_ns - std::min(r->duration_ns, first)) / 2)
      ++e.late;
    e.bins |= uint64_t{1} << std::min<uint64_t>(63, rel(a.alloc_ns) * 64 / (r->duration_ns + 1));
  });
  for (const auto& [key, k1] : keys) {
    const MemoryTotals& t = live.totals().at(key);
    if (t.allocs == 0 && t.unmatched_frees == 0) continue;  // mappings or reservations only
    MemoryKeyReport k;
    k.key = key;
    const std::string& pname = process_names[key.pid];
    k.process = (pname.empty() ? "pid " : pname + " pid ") + std::to_string(key.pid);
    const std::string& dname = device_names[{key.pid, key.device_id}];
    k.device = "GPU " + std::to_string(key.device_id) + (dname.empty() ? "" : ": " + dname);
    k.totals = t;
    k.peak_bytes = k1.peak;
    if (auto p = peaks.find(key); p != peaks.end()) k.at_peak = p->second;
    if (auto in = key_instant.find(key); in != key_instant.end()) {
      k.peak_nvtx_range = instants[in->second].inner;
      k.peak_place = place_of(instants[in->second]);
    }
    if (auto st = steps.find(key.pid); st != steps.end()) k.steps = st->second.Summary();
    KeyPass2& k2 = keys2[key];
    if (k2.bins.empty()) k2.bins.assign(nbins, 0);
    for (; k2.next_bin < nbins; ++k2.next_bin)
      k2.bins[k2.next_bin] = std::max(k2.bins[k2.next_bin], k2.live);
    k.bins = k2.bins;
    k.graph_pool_peak_bytes = k2.graph_at_peak;
    k.graph_pool_end_bytes = k2.graph_live;
    k.graph_pool_end_count = graph_end_count[key];
    k.summary = Summarize(k.bins, r->duration_ns, k.peak_bytes, k2.live);
    for (auto& [owner, os] : k2.owners) {
      if (os.peak == 0) continue;
      auto since = held_since.find({key, owner});
      for (; os.next_bin < nbins; ++os.next_bin)
        os.bins[os.next_bin] = std::max(os.bins[os.next_bin], os.live);
      auto in = owner_instant.find({key, owner});
      k.owners.push_back(
          {.owner = names.OwnerName(owner),
           .library = names.Library(owner),
           .peak_bytes = os.peak,
           .peak_ns = os.peak_ns,
           .end_bytes = os.live,
           .first_ns = os.first_ns,
           .held_since_ns = since == held_since.end() ? 0 : since->second,
           .peak_place = in == owner_instant.end() ? StepPlace{} : place_of(instants[in->second]),
           .bins = std::move(os.bins)});
    }
    SortDesc(&k.owners, [](const OwnerPeak& x) { return x.peak_bytes; });
    k.end_bytes = t.live_bytes;
    k.end_count = t.live_count;
    for (auto& [site, e] : end_sites[key]) {
      e.row.site = site.first;
      e.row.suspect = e.late >= 2 && e.late * 3 >= e.row.count && std::popcount(e.bins) >= 3 &&
                      e.row.owner != "module globals";
      k.live_at_end.push_back(e.row);
    }
    SortDesc(&k.live_at_end, [](const SiteBytes& s) { return s.bytes; });
    if (auto a = at_snap.find(key); a != at_snap.end()) k.at = a->second;
    if (key.space == MemorySpace::kDevice)
      if (auto u = used.find({key.pid, key.device_id}); u != used.end())
        k.used_at_start = u->second.second;
    if (key.space == MemorySpace::kDevice) {
      if (auto a = torch_totals[0].find({key.pid, key.device_id}); a != torch_totals[0].end())
        k.torch_allocated_peak = a->second;
      if (auto v = torch_totals[1].find({key.pid, key.device_id}); v != torch_totals[1].end())
        k.torch_reserved_peak = v->second;
    }
    r->keys.push_back(std::move(k));
  }

  // Churn by call site.
  std::map<std::string, ChurnRow> churn;
  for (const auto& [stack, s] : stacks) {
    if (s.frees == 0) continue;
    ChurnRow& c = churn[names.Site(stack)];
    Allocation of_stack;
    of_stack.stack_id = stack;
    c.owner = names.OwnerName(names.Owner(of_stack));
    c.allocs += s.allocs;
    c.frees += s.frees;
    c.bytes += s.bytes;
    c.mean_lifetime_ns += s.lifetime_ns;  // a sum until divided below
  }
  const double seconds = std::max(1e-9, r->duration_ns * 1e-9);
  for (auto& [site, c] : churn) {
    c.site = site;
    c.mean_lifetime_ns = c.frees ? c.mean_lifetime_ns / c.frees : 0;
    c.per_second = c.allocs / seconds;
    r->churn.push_back(c);
  }
  SortDesc(&r->churn, [](const ChurnRow& c) { return c.frees; });
  AddFindings(r);
  return OkStatus();
}

}  // namespace tracesmith::analysis
