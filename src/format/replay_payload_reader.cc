// Reading a whole replay capture from an SBT file, and cross-checking it.
#include <algorithm>

#include "tracesmith/format/replay_payload.h"

namespace tracesmith::format {

const ModuleRecord* ReplayCapture::FindModule(uint64_t hash) const {
  for (const ModuleRecord& m : modules)
    if (m.hash == hash) return &m;
  return nullptr;
}

StatusOr<std::span<const uint8_t>> ReplayCapture::BlobData(uint64_t hash,
                                                           const std::string& what) const {
  auto it = blobs.find(hash);
  if (it == blobs.end())
    return NotFound(StrFormat("%s: its contents (blob 0x%016llx) are missing from the capture",
                              what.c_str(), static_cast<unsigned long long>(hash)));
  if (!it->second.complete())
    return DataLoss(StrFormat(
        "%s: only %zu of %llu bytes of blob 0x%016llx are in the capture (truncated capture?)",
        what.c_str(), it->second.data.size(), static_cast<unsigned long long>(it->second.total),
        static_cast<unsigned long long>(hash)));
  return std::span<const uint8_t>(it->second.data);
}

StatusOr<ReplayCapture> ReadReplayCapture(format::SbtReader& reader) {
  ReplayCapture cap;
  // Blobs first: a launch or snapshot is only checked against complete blobs
  // in ValidateCapture, so chunk order inside the file does not matter.
  for (PayloadChunk type : {PayloadChunk::kCaptureInfo, PayloadChunk::kBlobPiece,
                            PayloadChunk::kModule, PayloadChunk::kLaunch, PayloadChunk::kSnapshot,
                            PayloadChunk::kStreamOp, PayloadChunk::kGraphLaunch}) {
    RETURN_IF_ERROR(reader.ReadRawChunks(
        uint16_t(type), [&](std::span<const uint8_t> payload, uint64_t offset) {
          return ParsePayloadChunk(uint16_t(type), payload, offset, &cap);
        }));
  }
  std::stable_sort(cap.launches.begin(), cap.launches.end(),
                   [](const LaunchRecord& a, const LaunchRecord& b) { return a.index < b.index; });
  std::stable_sort(
      cap.graphs.begin(), cap.graphs.end(),
      [](const GraphLaunchRecord& a, const GraphLaunchRecord& b) { return a.index < b.index; });
  std::stable_sort(cap.stream_ops.begin(), cap.stream_ops.end(),
                   [](const StreamOpRecord& a, const StreamOpRecord& b) { return a.seq < b.seq; });
  return cap;
}

namespace {

// The module of a kernel (launch or graph node) and its image are present.
Status CheckModule(const ReplayCapture& cap, uint64_t hash, const std::string& what) {
  if (!cap.FindModule(hash))
    return NotFound(StrFormat("%s: module 0x%016llx is missing from the capture", what.c_str(),
                              static_cast<unsigned long long>(hash)));
  return cap.BlobData(hash, what + " module image").status();
}

// Launch (or graph launch) `index` has `ranges` before and after snapshots,
// complete, not overlapping, each after range matching a before range.
Status CheckSnapshots(const ReplayCapture& cap, uint64_t index, uint32_t ranges,
                      const std::string& what) {
  std::vector<const SnapshotRecord*> mine[2];
  for (const SnapshotRecord& s : cap.snapshots)
    if (s.launch_index == index) mine[int(s.phase)].push_back(&s);
  if (mine[0].size() != ranges || mine[1].size() != ranges)
    return NotFound(
        StrFormat("%s: %zu 'before' and %zu 'after' memory snapshots of the %u "
                  "recorded (missing snapshot; truncated capture?)",
                  what.c_str(), mine[0].size(), mine[1].size(), ranges));
  for (int phase = 0; phase < 2; ++phase) {
    auto& v = mine[phase];
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->address < b->address; });
    for (size_t k = 0; k < v.size(); ++k) {
      const std::string sw =
          StrFormat("%s %s snapshot of 0x%llx (+%llu)", what.c_str(), phase ? "after" : "before",
                    static_cast<unsigned long long>(v[k]->address),
                    static_cast<unsigned long long>(v[k]->size));
      ASSIGN_OR_RETURN(auto data, cap.BlobData(v[k]->hash, sw));
      if (data.size() != v[k]->size)
        return DataLoss(StrFormat("%s: blob holds %zu bytes", sw.c_str(), data.size()));
      if (k > 0 && v[k - 1]->address + v[k - 1]->size > v[k]->address)
        return DataLoss(sw + ": overlaps the previous snapshot");
      if (phase == 1 && (v[k]->address != mine[0][k]->address || v[k]->size != mine[0][k]->size))
        return DataLoss(sw + ": no 'before' snapshot of the same range");
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateCapture(const ReplayCapture& cap) {
  if (cap.launches.empty() && cap.graphs.empty())
    return NotFound(
        "the file holds no replay payload (kernel launches); record one with "
        "`tracesmith profile --replay-capture=...`");
  for (size_t i = 1; i < cap.launches.size(); ++i)
    if (cap.launches[i].index == cap.launches[i - 1].index)
      return DataLoss(StrFormat("launch %llu appears twice",
                                static_cast<unsigned long long>(cap.launches[i].index)));
  for (size_t i = 1; i < cap.graphs.size(); ++i)
    if (cap.graphs[i].index == cap.graphs[i - 1].index)
      return DataLoss(StrFormat("graph launch %llu appears twice",
                                static_cast<unsigned long long>(cap.graphs[i].index)));
  for (const GraphLaunchRecord& g : cap.graphs) {
    auto it = std::lower_bound(cap.launches.begin(), cap.launches.end(), g.index,
                               [](const LaunchRecord& l, uint64_t i) { return l.index < i; });
    if (it != cap.launches.end() && it->index == g.index)
      return DataLoss(
          StrFormat("launch %llu is recorded both as a kernel launch and as a graph "
                    "launch",
                    static_cast<unsigned long long>(g.index)));
  }
  for (const LaunchRecord& l : cap.launches) {
    const std::string what =
        StrFormat("launch %llu (%s)", static_cast<unsigned long long>(l.index), l.function.c_str());
    RETURN_IF_ERROR(CheckModule(cap, l.module_hash, what));
    RETURN_IF_ERROR(CheckSnapshots(cap, l.index, l.snapshot_ranges, what));
  }
  for (const GraphLaunchRecord& g : cap.graphs) {
    const std::string what =
        StrFormat("graph launch %llu", static_cast<unsigned long long>(g.index));
    for (size_t k = 0; k < g.nodes.size(); ++k)
      if (g.nodes[k].kind == GraphNodeKind::kKernel)
        RETURN_IF_ERROR(CheckModule(
            cap, g.nodes[k].kernel.module_hash,
            StrFormat("%s node %zu (%s)", what.c_str(), k, g.nodes[k].kernel.function.c_str())));
    RETURN_IF_ERROR(CheckSnapshots(cap, g.index, g.snapshot_ranges, what));
  }
  return OkStatus();
}

}  // namespace tracesmith::format
