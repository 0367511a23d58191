// The replay capture (`--replay-capture`, replay_capture.h) as a recorder:
// launches, graph calls, stream ops and (--replay-memory reachable/all)
// allocations from driver callbacks after the engine's timed path, the
// module images from module loads, and its payload chunks written after
// each flush's CUPTI records.
#include <cstdio>

#include "replay_capture.h"
#include "tracesmith/base/status.h"
#include "tracesmith/capture/recorder.h"

namespace tracesmith::replay_capture {
namespace {

class ReplayRecorder final : public capture::Recorder {
 public:
  ReplayRecorder(const capture::CaptureOptions& options, std::string output_path)
      : capturer_(options.replay_capture, options),
        quiet_(options.quiet),
        output_path_(std::move(output_path)) {}

  const char* name() const override { return "replay"; }

  void Claim(capture::CallbackClaims& claims) override {
    // Untimed, entry and exit: a recorded launch synchronizes and copies
    // memory, which is not the launch's capture cost.
    capture::DriverClaim how;
    how.timed = false;
    how.exit = true;
    for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
      // Range replay re-issues the copies, memsets and event/sync calls
      // between recorded launches.
      if (ReplayCapturer::IsLaunchCallback(cbid) || ReplayCapturer::IsGraphCallback(cbid) ||
          ReplayCapturer::IsStreamOpCallback(cbid) ||
          (capturer_.tracks_allocations() && ReplayCapturer::IsMemoryCallback(cbid)))
        claims.Driver(cbid, how);
    }
    claims.ModuleLoads();
  }

  void OnDriverCall(const capture::DriverCallEvent& call) override {
    if (ReplayCapturer::IsLaunchCallback(call.cbid))
      capturer_.OnLaunch(call.cbid, call.info, call.active);
    else if (ReplayCapturer::IsGraphCallback(call.cbid))
      capturer_.OnGraph(call.cbid, call.info, call.active);
    else if (ReplayCapturer::IsMemoryCallback(call.cbid))
      capturer_.OnMemory(call.cbid, call.info);
    else
      capturer_.OnStreamOp(call.cbid, call.info, call.active);
  }

  void OnModuleLoaded(CUcontext, const CUpti_ModuleResourceData& module) override {
    capturer_.OnModuleLoaded(module.pCubin, module.cubinSize);
  }

  void AfterActivityBuffers(format::SbtWriter& sbt, bool) override { capturer_.Drain(&sbt); }

  void WriteStats(capture::StatSink& stats) override {
    ReplayCaptureStats rs = capturer_.stats();
    stats.Add("replay.launches_recorded", rs.launches_captured);
    stats.Add("replay.memory_image_bytes", rs.image_bytes);
    stats.Add("replay.stream_ops", rs.stream_ops);
    stats.Add("replay.skipped_over_limit", rs.skipped_limit, model::kStatWarning);
    stats.Add("replay.skipped_graph_capture", rs.skipped_graph, model::kStatWarning);
    stats.Add("replay.graph_launches_recorded", rs.graph_launches_captured);
    stats.Add("replay.skipped_graph_unsupported_node", rs.skipped_graph_unsupported,
              model::kStatWarning);
    stats.Add("replay.skipped_graph_changed", rs.skipped_graph_changed, model::kStatWarning);
    stats.Add("replay.skipped_graph_unseen", rs.skipped_graph_unknown, model::kStatWarning);
    stats.Add("replay.skipped_errors", rs.skipped_error, model::kStatWarning);
    stats.Add("replay.reached_allocations", rs.reached_ranges);
    stats.Add("replay.reached_bytes", rs.reached_bytes);
    stats.Add("replay.reach_incomplete_launches", rs.reach_incomplete, model::kStatWarning);
    stats.Add("replay.reach_scan_us", rs.reach_scan_ns / 1000);
    double gbps = rs.copy_ns ? double(rs.image_bytes) / double(rs.copy_ns) : 0;
    stats.Add("replay.snapshot_mb_per_s", uint64_t(gbps * 1000));
    stats.Add("replay.reference_dtoh_mb_per_s", uint64_t(rs.reference_dtoh_gbps * 1000));
    if (quiet_) return;
    std::fprintf(stderr,
                 "tracesmith: replay capture: %llu launch(es)%s and %llu stream op(s) "
                 "recorded, %.1f MiB of memory images copied at %.2f GB/s (a plain 64 MiB "
                 "device-to-host copy here: %.2f GB/s); replay them with: tracesmith replay "
                 "%s\n",
                 static_cast<unsigned long long>(rs.launches_captured),
                 rs.graph_launches_captured
                     ? StrFormat(", %llu graph launch(es)",
                                 static_cast<unsigned long long>(rs.graph_launches_captured))
                           .c_str()
                     : "",
                 static_cast<unsigned long long>(rs.stream_ops), double(rs.image_bytes) / (1 << 20),
                 gbps, rs.reference_dtoh_gbps, output_path_.c_str());
  }

 private:
  ReplayCapturer capturer_;
  const bool quiet_;
  const std::string output_path_;
};

}  // namespace

std::unique_ptr<capture::Recorder> MakeReplayRecorder(const capture::RecorderContext& context) {
  if (!context.subscribed ||
      context.options->replay_capture.kind == capture::ReplayFilter::Kind::kOff)
    return nullptr;
  return std::make_unique<ReplayRecorder>(*context.options, context.output_path);
}

}  // namespace tracesmith::replay_capture
