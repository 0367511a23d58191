#include "tracesmith/replay/extract.h"

#include <algorithm>
#include <memory>

#include "tracesmith/base/atomic_file.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_reader.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/replay/recorded_times.h"

namespace tracesmith::replay {

namespace {
const char* ImageKindName(format::ImageKind k) {
  switch (k) {
    case format::ImageKind::kCubin:
      return "cubin";
    case format::ImageKind::kFatbin:
      return "fatbin";
    case format::ImageKind::kPtx:
      return "PTX";
    case format::ImageKind::kUnknown:
      break;
  }
  return "image";
}

// `cap` cut down to what a reproducer of launch `index` needs besides its
// record: the capture info, modules and blobs, and that launch's snapshots.
format::ReplayCapture OneLaunchOf(const format::ReplayCapture& cap, uint64_t index) {
  format::ReplayCapture one;
  one.info = cap.info;
  one.has_info = cap.has_info;
  one.modules = cap.modules;
  one.blobs = cap.blobs;
  for (const format::SnapshotRecord& s : cap.snapshots)
    if (s.launch_index == index) one.snapshots.push_back(s);
  return one;
}

// A reproducer being written: the file, its capture info, and what the
// summary counts as modules and snapshots go in.
class ReproducerWriter {
 public:
  // `what`: "one launch", "one graph launch" (said in the capture info's tool).
  Status Open(const std::string& out, const format::ReplayCapture& cap, const char* what,
              ExtractSummary* sum) {
    sum_ = sum;
    sum->info = cap.info;
    sum->has_info = cap.has_info;
    format::SbtWriterOptions wo;
    wo.zstd_level = 9;  // written once, read rarely: smaller is better
    wo.replace_atomically = true;
    ASSIGN_OR_RETURN(writer_, format::SbtWriter::Open(out, wo));
    payload_ = std::make_unique<format::ReplayPayloadWriter>(writer_.get());
    if (!cap.has_info) return OkStatus();
    format::CaptureInfo info = cap.info;
    info.tool += info.tool.empty() ? std::string("tracesmith replay --extract")
                                   : StrFormat(" (%s extracted)", what);
    return payload_->WriteCaptureInfo(info);
  }
  // Module `hash` of `cap` (once per module).
  Status AddModule(const format::ReplayCapture& cap, uint64_t hash) {
    if (std::find(modules_.begin(), modules_.end(), hash) != modules_.end()) return OkStatus();
    modules_.push_back(hash);
    const format::ModuleRecord* module = cap.FindModule(hash);
    ASSIGN_OR_RETURN(auto image, cap.BlobData(module->hash, "module image"));
    ASSIGN_OR_RETURN(uint64_t written, payload_->AddModule(image, module->kind, module->name));
    if (written != hash) return Internal("the module's content hash changed while it was copied");
    sum_->module_bytes += image.size();
    sum_->module_kind = module->kind;
    return OkStatus();
  }
  // `one`'s snapshots (OneLaunchOf).
  Status AddSnapshots(const format::ReplayCapture& one) {
    for (const format::SnapshotRecord& s : one.snapshots) {
      ASSIGN_OR_RETURN(auto bytes, one.BlobData(s.hash, "memory image"));
      RETURN_IF_ERROR(payload_->AddSnapshot(s.launch_index, s.phase, s.address, bytes, s.origin));
      if (s.phase == format::SnapshotPhase::kBefore) {
        ++sum_->ranges;
        sum_->memory_bytes += s.size;
        sum_->reached += s.origin.source == format::RangeSource::kPointer;
      }
    }
    return OkStatus();
  }
  format::ReplayPayloadWriter& payload() { return *payload_; }
  // Closes the file; the summary gets its size.
  Status Close(const std::string& out) {
    RETURN_IF_ERROR(writer_->Close());
    ASSIGN_OR_RETURN(sum_->file_bytes, FileSize(out));
    return OkStatus();
  }

 private:
  ExtractSummary* sum_ = nullptr;
  std::unique_ptr<format::SbtWriter> writer_;
  std::unique_ptr<format::ReplayPayloadWriter> payload_;
  std::vector<uint64_t> modules_;
};

// A graph launch alone: its record, every module its kernel nodes use, its
// snapshots and the capture info.
StatusOr<ExtractSummary> ExtractGraphLaunch(const std::string& in, const std::string& out,
                                            const format::ReplayCapture& cap,
                                            const format::GraphLaunchRecord& source) {
  format::GraphLaunchRecord graph = source;
  format::ReplayCapture one = OneLaunchOf(cap, graph.index);
  one.graphs = {graph};
  RETURN_IF_ERROR(format::ValidateCapture(one));
  if (graph.recorded_ns == 0) {
    format::ReplayCapture times;
    times.graphs = {graph};
    FillRecordedTimes(in, &times);
    graph.recorded_ns = times.graphs[0].recorded_ns;
  }
  graph.correlation_id = 0;  // the reproducer carries no trace

  ExtractSummary sum;
  sum.launch = graph.index;
  sum.function =
      StrFormat("graph launch (%zu nodes: %s)", graph.nodes.size(), graph.DescribeNodes().c_str());
  sum.recorded_ns = graph.recorded_ns;
  ReproducerWriter w;
  RETURN_IF_ERROR(w.Open(out, cap, "one graph launch", &sum));
  for (const format::GraphNodeRecord& n : graph.nodes) {
    if (n.kind != format::GraphNodeKind::kKernel) continue;
    sum.param_bytes += n.kernel.params.size();
    RETURN_IF_ERROR(w.AddModule(cap, n.kernel.module_hash));
  }
  RETURN_IF_ERROR(w.AddSnapshots(one));
  RETURN_IF_ERROR(w.payload().AddGraphLaunch(graph));
  RETURN_IF_ERROR(w.Close(out));
  return sum;
}

}  // namespace

StatusOr<ExtractSummary> ExtractLaunch(const std::string& in, const std::string& out,
                                       const ExtractOptions& options) {
  const std::string inputs[] = {in};
  RETURN_IF_ERROR(CheckOutputFile(out, inputs, options.overwrite));
  ASSIGN_OR_RETURN(auto reader, format::SbtReader::Open(in));
  ASSIGN_OR_RETURN(format::ReplayCapture cap, format::ReadReplayCapture(*reader));
  if (!reader->report().clean()) return reader->report().DamageStatus(in);
  auto it = std::find_if(cap.launches.begin(), cap.launches.end(),
                         [&](const format::LaunchRecord& l) { return l.index == options.launch; });
  if (it == cap.launches.end() && cap.FindGraph(options.launch))
    return ExtractGraphLaunch(in, out, cap, *cap.FindGraph(options.launch));
  if (it == cap.launches.end()) {
    std::vector<uint64_t> indices;
    for (const format::LaunchRecord& l : cap.launches) indices.push_back(l.index);
    for (const format::GraphLaunchRecord& g : cap.graphs) indices.push_back(g.index);
    std::sort(indices.begin(), indices.end());
    std::string have;
    for (size_t k = 0; k < indices.size() && k < 20; ++k)
      have += (k ? ", " : "") + std::to_string(indices[k]);
    if (indices.size() > 20) have += ", ...";
    return NotFound(StrFormat("%s: no recorded launch %llu (recorded: %s)", in.c_str(),
                              static_cast<unsigned long long>(options.launch),
                              have.empty() ? "none" : have.c_str()));
  }
  format::LaunchRecord launch = *it;
  // Check what the reproducer needs is all there before writing anything.
  format::ReplayCapture one = OneLaunchOf(cap, launch.index);
  one.launches = {launch};
  RETURN_IF_ERROR(format::ValidateCapture(one));
  // The time in the program: from the trace's kernel row, which the
  // reproducer does not carry (its correlation id would point nowhere).
  if (launch.recorded_ns == 0) {
    format::ReplayCapture times;
    times.launches = {launch};
    FillRecordedTimes(in, &times);
    launch.recorded_ns = times.launches[0].recorded_ns;
  }
  launch.correlation_id = 0;

  ExtractSummary sum;
  sum.launch = launch.index;
  sum.function = launch.function;
  sum.param_bytes = launch.params.size();
  sum.recorded_ns = launch.recorded_ns;
  ReproducerWriter w;
  RETURN_IF_ERROR(w.Open(out, cap, "one launch", &sum));
  RETURN_IF_ERROR(w.AddModule(cap, launch.module_hash));
  RETURN_IF_ERROR(w.AddSnapshots(one));
  RETURN_IF_ERROR(w.payload().AddLaunch(launch));
  RETURN_IF_ERROR(w.Close(out));
  return sum;
}

std::string FormatExtractSummary(const std::string& out, const ExtractSummary& s) {
  std::string text = StrFormat(
      "wrote %s (%s): launch %llu %s\n  module: %s (%s)\n  memory: %u range(s), %s before and "
      "%s after",
      out.c_str(), HumanBytes(s.file_bytes).c_str(), static_cast<unsigned long long>(s.launch),
      s.function.c_str(), HumanBytes(s.module_bytes).c_str(), ImageKindName(s.module_kind),
      s.ranges, HumanBytes(s.memory_bytes).c_str(), HumanBytes(s.memory_bytes).c_str());
  if (s.reached) text += StrFormat(" (%u reached through pointers in memory)", s.reached);
  text += StrFormat("\n  parameters: %llu bytes", static_cast<unsigned long long>(s.param_bytes));
  if (s.recorded_ns)
    text += StrFormat("; time in the program: %.2f us", double(s.recorded_ns) / 1000.0);
  if (s.has_info)
    text += StrFormat(
        "\n  captured on: %s (sm_%u%u), driver %u.%u; replays on a GPU of that "
        "architecture",
        s.info.device_name.c_str(), s.info.cc_major, s.info.cc_minor, s.info.driver_version / 1000,
        s.info.driver_version % 1000 / 10);
  text += StrFormat("\n  replay it with: tracesmith replay %s\n", out.c_str());
  return text;
}

}  // namespace tracesmith::replay
