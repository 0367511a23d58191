// Perfetto export of a distributed job (job_export.h): the ranks' events on
// the job clock, one process per rank, flows across a collective's kernels.
// Written with the single-trace exporter's track layer (perfetto_tracks.h);
// names come from several traces' string tables, so every name is a local
// (writer-interned) one.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "output_file.h"
#include "perfetto_tracks.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/export/job_export.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {
namespace {

using analysis::CompactTrace;
using analysis::GpuOp;
using analysis::HostCall;
using analysis::NvtxRecord;
using analysis::OpKind;

// Where a rank's collective kernel sits in the job: its flow and its place.
struct CollectiveMark {
  uint64_t flow_id = 0;
  bool terminates = false;  // the last arrival: the flow ends on it
  uint32_t comm = 0, seq = 0;
  analysis::CollectiveOp op = analysis::CollectiveOp::kUnknown;
};

class JobWriter {
 public:
  JobWriter(OutputFile* out, const analysis::JobClock& clock) : w_(out), clock_(clock) {
    w_.SetTraceStrings(&no_strings_);
    n_collective_ = w_.LocalName("collective");
    n_comm_ = w_.LocalName("comm");
    n_seq_ = w_.LocalName("seq");
    n_bytes_ = w_.LocalName("bytes");
    n_memcpy_ = w_.LocalName("Memcpy");
    n_memset_ = w_.LocalName("Memset");
  }
  PerfettoTrackWriter& writer() { return w_; }

  // Writes rank `i` (its trace finalized, its collectives' marks by op index).
  void WriteRank(size_t i, const analysis::RankSummary& s, int32_t shown_pid, const CompactTrace& t,
                 const std::unordered_map<uint32_t, CollectiveMark>& marks) {
    const analysis::ProcessClock& clock = clock_.process(i);
    const uint64_t process = w_.NewUuid();
    std::string name = s.rank >= 0 ? "rank " + std::to_string(s.rank) : "rank ?";
    if (!s.host.empty()) name += " · " + s.host;
    name += " · pid " + std::to_string(s.pid);
    if (!clock.aligned()) name += " (clock not aligned)";
    w_.DescribeProcess(process, shown_pid, name);
    std::vector<TrackGroup> groups(t.lanes().size());
    std::unordered_map<uint32_t, uint32_t> names;  // trace string id -> local key
    auto name_key = [&](uint32_t id) {
      auto [it, inserted] = names.try_emplace(id, 0);
      if (inserted) it->second = w_.LocalName(t.String(id));
      return it->second;
    };
    auto group_of = [&](uint32_t lane) {
      TrackGroup& g = groups[lane];
      if (!g.lanes.empty()) return &g;
      const analysis::Lane& l = t.lanes()[lane];
      const uint64_t uuid = w_.NewUuid();
      g.parent_uuid = process;
      if (l.host) {
        w_.DescribeThread(uuid, shown_pid, l.tid, "");
      } else {
        g.name = "GPU " + std::to_string(l.device) + " · stream " + std::to_string(l.stream);
        w_.DescribeTrack(uuid, process, g.name);
      }
      g.lanes.push_back(w_.NewLane(uuid));
      return &g;
    };
    auto slice = [&](uint32_t lane, uint64_t s0, uint64_t e0, uint32_t key, auto&& fields) {
      const uint64_t s = clock.ToJob(s0), e = std::max(s, clock.ToJob(e0));
      if (s < base_) return;  // before the job's base: only an unaligned rank's outliers
      TrackLane* l = w_.LaneFor(group_of(lane), s, e);
      w_.BeginEvent(l, s, pf::kTypeSliceBegin, key);
      fields();
      w_.EndEvent();
      l->open.push_back(e);
      ++slices_;
      w_.MaybeFlush();
    };
    // GPU streams.
    for (uint32_t lane : t.gpu_lanes()) {
      const analysis::LaneRange r = t.lane_range(lane);
      for (uint32_t op = r.begin; op < r.end; ++op) {
        const GpuOp o = t.ops()[op];
        const uint32_t key = o.kind() == OpKind::kKernel   ? name_key(o.name_id)
                             : o.kind() == OpKind::kMemcpy ? n_memcpy_
                                                           : n_memset_;
        slice(lane, o.start_ns, o.end_ns, key, [&] {
          if (o.kind() != OpKind::kKernel) {
            w_.AnnotateUint(n_bytes_, t.copies()[o.extra].bytes);
            return;
          }
          auto m = marks.find(op);
          if (m == marks.end()) return;
          const CollectiveMark& c = m->second;
          w_.AnnotateString(n_collective_, std::string(analysis::CollectiveOpName(c.op)) + " #" +
                                               std::to_string(c.seq));
          w_.AnnotateUint(n_comm_, c.comm);
          w_.AnnotateUint(n_seq_, c.seq);
          if (c.terminates)
            w_.enc().Varint<pf::kTeTerminatingFlowIdsOld>(c.flow_id);
          else
            w_.enc().Varint<pf::kTeFlowIdsOld>(c.flow_id);
          ++flows_;
        });
      }
    }
    // Host threads: API calls and NVTX ranges merged by start (a range
    // before a call that starts with it, so the call nests inside).
    const auto& nvtx = t.nvtx();
    size_t n = 0;
    for (size_t lane = 0; lane < t.lanes().size(); ++lane) {
      if (!t.lanes()[lane].host) continue;
      const analysis::LaneRange r = t.lane_range(uint32_t(lane));
      while (n < nvtx.size() && nvtx[n].lane < lane) ++n;
      uint32_t c = r.begin;
      while (c < r.end || (n < nvtx.size() && nvtx[n].lane == lane)) {
        const bool range = n < nvtx.size() && nvtx[n].lane == lane &&
                           (c >= r.end || nvtx[n].start_ns <= t.calls()[c].start_ns);
        if (range) {
          const NvtxRecord& x = nvtx[n++];
          slice(uint32_t(lane), x.start_ns, x.end_ns, name_key(x.name_id), [] {});
        } else {
          const HostCall x = t.calls()[c++];
          slice(uint32_t(lane), x.start_ns, x.end_ns, name_key(x.name_id), [] {});
        }
      }
    }
    for (TrackGroup& g : groups)
      for (TrackLane* l : g.lanes) w_.CloseAll(l);
    w_.Flush();
  }

  void SetBase(uint64_t base) {
    base_ = base;
    w_.SetBaseTime(base);
  }
  uint64_t slices() const { return slices_; }
  uint64_t flows() const { return flows_; }

 private:
  PerfettoTrackWriter w_;
  const analysis::JobClock& clock_;
  model::StringTable no_strings_;
  uint32_t n_collective_, n_comm_, n_seq_, n_bytes_, n_memcpy_, n_memset_;
  uint64_t base_ = 0, slices_ = 0, flows_ = 0;
};

}  // namespace

StatusOr<JobExportStats> ExportJobPerfetto(std::span<const std::string> files,
                                           const std::string& out_path,
                                           const analysis::JobOptions& options) {
  JobExportStats stats;
  // Pass 1: summaries (each file alone), the job clock and the matching.
  std::vector<analysis::RankSummary> summaries;
  for (const std::string& f : files) {
    auto s = analysis::SummarizeFile(f);
    if (!s.ok()) {
      stats.warnings.push_back(s.status().message() + " (left out)");
      continue;
    }
    for (auto& x : *s) {
      for (const std::string& w : x.warnings) stats.warnings.push_back(x.Label() + ": " + w);
      summaries.push_back(std::move(x));
    }
  }
  if (summaries.empty())
    return InvalidArgument("no rank could be read" +
                           (stats.warnings.empty() ? "" : ": " + stats.warnings[0]));
  stats.left_out = analysis::LeaveOutLaunchers(&summaries);
  analysis::SortRanks(&summaries);
  const analysis::JobAlignment al = analysis::AlignJob(summaries, options.clock);
  for (const std::string& w : al.match.warnings) stats.warnings.push_back(w);
  for (const std::string& w : al.clock.warnings()) stats.warnings.push_back(w);
  const size_t n = summaries.size();
  // Each matched collective's flow: from every member to the last arrival.
  std::vector<std::unordered_map<uint32_t, CollectiveMark>> marks_by_part(n);
  for (size_t k = 0; k < al.match.matches.size(); ++k) {
    const analysis::CollectiveMatch& m = al.match.matches[k];
    size_t last = n;
    uint64_t last_arrival = 0;
    for (size_t i = 0; i < n; ++i) {
      if (m.part[i] == analysis::kNone) continue;
      const uint64_t a = al.clock.process(i).ToJob(al.times[k].start[i]);
      if (last == n || a > last_arrival) last = i, last_arrival = a;
    }
    for (size_t i = 0; i < n; ++i)
      if (m.part[i] != analysis::kNone)
        marks_by_part[i][m.part[i]] = {.flow_id = k + 1,
                                       .terminates = i == last,
                                       .comm = m.comm,
                                       .seq = m.seq,
                                       .op = al.times[k].op};
  }
  uint64_t base = UINT64_MAX;
  std::map<std::string, uint32_t> processes_in;
  std::set<uint32_t> pids;
  bool pid_clash = false;
  for (size_t i = 0; i < n; ++i) {
    if (summaries[i].first_ns)
      base = std::min(base, al.clock.process(i).ToJob(summaries[i].first_ns));
    processes_in[summaries[i].source]++;
    pid_clash |= !pids.insert(summaries[i].pid).second;
  }
  if (base == UINT64_MAX) base = 0;

  std::vector<std::string> inputs(files.begin(), files.end());
  ASSIGN_OR_RETURN(auto out, OutputFile::Open(out_path, /*gzip=*/false, inputs));
  JobWriter writer(out.get(), al.clock);
  writer.SetBase(base);
  // Pass 2: each rank's events, one rank in memory at a time.
  for (size_t i = 0; i < n; ++i) {
    const analysis::RankSummary& s = summaries[i];
    CompactTrace t;
    const bool merged = processes_in[s.source] > 1;
    RETURN_IF_ERROR(analysis::LoadProcessTrace(s.source, merged ? &s.pid : nullptr, &t));
    std::vector<uint32_t> op_index;
    analysis::ExtractCollectives(t, s.pid, &op_index);
    std::unordered_map<uint32_t, CollectiveMark> marks;
    for (const auto& [part, mark] : marks_by_part[i])
      if (part < op_index.size() && op_index[part] != analysis::kNone)  // host collective: none
        marks[op_index[part]] = mark;
    // Two ranks with one pid (on different hosts) would merge in the UI.
    const int32_t shown =
        pid_clash ? int32_t((i + 1) * 1'000'000 + s.pid % 1'000'000) : int32_t(s.pid);
    writer.WriteRank(i, s, shown, t, marks);
  }
  RETURN_IF_ERROR(out->Commit());
  stats.ranks = uint32_t(n);
  stats.slices = writer.slices();
  stats.flows = writer.flows();
  stats.bytes = out->file_bytes();
  return stats;
}

}  // namespace tracesmith::exporter
